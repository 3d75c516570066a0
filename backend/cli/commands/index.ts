// Every CLI command file is imported here once, so registering a command is one new file plus one line.
import './run.js';
import './serve.js';
import './tokenizer.js';
import './buffer.js';
import './taskset.js';
import './runs.js';
import './eval.js';
import './explorer-process.js';
import './trainer-process.js';
import './coordinator.js';
import './explorer.js';
import './trainer.js';
import './workers.js';
import './model.js';
import './reward-model.js';
