/** Entry point: mounts the app into #app. */
import { App } from './app.js';

const root = document.getElementById('app');
if (root) new App(root).start();
