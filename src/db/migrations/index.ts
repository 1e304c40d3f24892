import { sql as initial } from './001-initial.js';

/** Numbered migrations, applied in order; PRAGMA user_version records the last applied. Never edit one that has shipped. */
export const MIGRATIONS: readonly string[] = [initial];
