import { render } from 'preact';
import { App } from './app.tsx';
import { interceptLinks } from './router.ts';
import './console.css';

const root = document.getElementById('app');
if (!root) throw new Error('the console page has no #app element');
interceptLinks(document.body);
render(<App />, root);
