// The owners out of credits (credits.atZero 'suspend-delivery'): every process reads them once a second
// (credits/delivery-suspension.ts, `depleted_at <= ?`); a partial index holds only the accounts at zero,
// so the read does not scan every account.
export const sql = `
CREATE INDEX credit_accounts_depleted ON credit_accounts(depleted_at) WHERE depleted_at IS NOT NULL;
`;
