/** The own-property helpers for dictionaries keyed by user-written names; they live with the machines, which use them too. */
export { getOwn, setOwn } from '../../machines/own.js';
