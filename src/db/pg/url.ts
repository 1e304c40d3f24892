// The `metadata` setting: 'sqlite' (the data directory's meta.db) or a PostgreSQL URL. A URL carries a
// password: whatever prints or logs one shows it through redactUrl.

const POSTGRES_URL = /^postgres(ql)?:\/\//;

export function isPostgresUrl(value: string): boolean {
  return POSTGRES_URL.test(value);
}

/** The URL with its password (in the authority or as ?password=) replaced by ***; for messages and logs. */
export function redactUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Not parseable: hide whatever stands between '//user:' and '@'.
    return value.replace(/(\/\/[^/:@]*:)[^/@]*@/, '$1***@').replace(/([?&]password=)[^&]*/gi, '$1***');
  }
  if (url.password !== '') url.password = '***';
  for (const key of [...url.searchParams.keys()]) if (key.toLowerCase() === 'password') url.searchParams.set(key, '***');
  return url.toString();
}
