// Passwords for the account dashboard's sign-in (issue 18), set from the admin CLI. password_hash is
// src/auth/passwords.ts's scrypt string; NULL: the user cannot sign in (API keys still work).
export const sql = `
ALTER TABLE users ADD COLUMN password_hash TEXT;
`;
