// SQLite migration 029's twin: a partial index of the accounts at zero.
export const sql = `
CREATE INDEX credit_accounts_depleted ON credit_accounts(depleted_at) WHERE depleted_at IS NOT NULL;
`;
