// Every CLI command file is imported here once, so registering a command is one new file plus one line.
import './demo.js';
