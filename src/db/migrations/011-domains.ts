// The domain reseller: the TLD catalogue with prices in minor units (US cents; kobo where a naira price
// of its own is set, else naira come from the exchange rate), promotions, and the operator's own list
// of names (reserved, sold, premium). TLDs are ASCII without the leading dot: 'com', 'co.uk', 'xn--p1ai'.
export const sql = `
CREATE TABLE tlds (
  tld                     TEXT PRIMARY KEY,
  register_usd            INTEGER NOT NULL CHECK (register_usd >= 0),
  renew_usd               INTEGER NOT NULL CHECK (renew_usd >= 0),
  transfer_usd            INTEGER NOT NULL CHECK (transfer_usd >= 0),
  register_ngn            INTEGER CHECK (register_ngn >= 0),
  renew_ngn               INTEGER CHECK (renew_ngn >= 0),
  transfer_ngn            INTEGER CHECK (transfer_ngn >= 0),
  min_years               INTEGER NOT NULL CHECK (min_years BETWEEN 1 AND 10),
  max_years               INTEGER NOT NULL CHECK (max_years BETWEEN min_years AND 10),
  restrictions            TEXT NOT NULL DEFAULT '',
  requires_local_presence INTEGER NOT NULL DEFAULT 0,
  -- The registry's RDAP 404 is known to mean "not registered" (else a 404 is reported as unknown).
  rdap_not_found_reliable INTEGER NOT NULL DEFAULT 0,
  -- Place in the popular list (1 first); NULL: not in it.
  popular_rank            INTEGER,
  updated_at              INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tlds_popular ON tlds(popular_rank) WHERE popular_rank IS NOT NULL;

CREATE TABLE tld_promotions (
  id         INTEGER PRIMARY KEY,
  tld        TEXT NOT NULL REFERENCES tlds(tld) ON DELETE CASCADE,
  bonus_ngn  INTEGER CHECK (bonus_ngn > 0),
  bonus_usd  INTEGER CHECK (bonus_usd > 0),
  -- YYYY-MM-DD, UTC: the last day the promotion applies.
  ends_on    TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  ended_at   INTEGER,
  CHECK (bonus_ngn IS NOT NULL OR bonus_usd IS NOT NULL)
);
CREATE INDEX tld_promotions_tld ON tld_promotions(tld);

CREATE TABLE domain_names (
  name       TEXT PRIMARY KEY,
  status     TEXT NOT NULL CHECK (status IN ('reserved', 'sold', 'premium')),
  price_usd  INTEGER CHECK (price_usd >= 0),
  price_ngn  INTEGER CHECK (price_ngn >= 0),
  note       TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  CHECK (status <> 'premium' OR price_usd IS NOT NULL)
) WITHOUT ROWID;
`;
