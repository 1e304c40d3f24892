// axe-core (Deque's accessibility rules engine) run inside a page of the browser tests. It is loaded
// with page.evaluate, which the page's Content-Security-Policy does not govern, so the dashboard's CSP
// stays as strict in the test as in production.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeFinding {
  id: string;
  impact: string;
  help: string;
  /** CSS selectors of the elements at fault (the first few). */
  targets: string[];
}

/** The page's accessibility violations of at least serious impact (WCAG 2.x A and AA rules, and axe's best practices). */
export async function seriousA11yViolations(page: Page): Promise<AxeFinding[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: unknown) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact ?? '', help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.map(String).join(' ')) }));
  });
}

/** One line per finding, for a test's message. */
export function describeFindings(findings: AxeFinding[]): string {
  return findings.map((f) => `${f.impact} ${f.id} (${f.help}): ${f.targets.join(', ')}`).join('; ');
}
