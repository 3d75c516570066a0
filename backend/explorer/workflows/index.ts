// Every built-in workflow registers itself on import.
import './single_turn.js';
import './multi_turn.js';
import './vision.js';
