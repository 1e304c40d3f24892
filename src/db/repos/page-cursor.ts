// Keyset pages of a list ordered newest first by (time, id): a page goes on after the last row of the
// previous one, so rows written meanwhile neither shift nor repeat it (OFFSET would). The API spells a
// position `<time>-<id>` (nextCursor); it is opaque to clients.

export interface PageCursor {
  /** Unix ms of the last row given. */
  time: number;
  /** Its tie-breaker: a sequence number or row id. */
  id: number;
}

export function cursorText(c: PageCursor): string {
  return `${c.time}-${c.id}`;
}

/** Undefined when the text is not one cursorText made. */
export function parseCursor(text: string): PageCursor | undefined {
  const m = /^(\d{1,15})-(\d{1,18})$/.exec(text);
  return m ? { time: Number(m[1]), id: Number(m[2]) } : undefined;
}

/** SQL after a cursor, newest first, over the columns named; parameters :cursorTime and :cursorId. */
export function afterCursorSql(timeColumn: string, idColumn: string): string {
  return ` AND (${timeColumn} < :cursorTime OR (${timeColumn} = :cursorTime AND ${idColumn} < :cursorId))`;
}

export function cursorParams(c: PageCursor): { cursorTime: number; cursorId: number } {
  return { cursorTime: c.time, cursorId: c.id };
}
