// GET /healthz (the process is up and serving) and GET /readyz (it can take writes: metadata
// database and storage backend; readiness.ts) on every listener, without credentials, for load
// balancers and orchestrators. They answer JSON with Cache-Control: no-store; 503 when not ready.
// `healthz` and `readyz` are reserved bucket names, and a request signed for S3 there goes to S3 (app.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../http/json-answer.js';
import type { Readiness } from './readiness.js';

export type HealthEndpoint = 'healthz' | 'readyz';

export async function answerHealth(req: IncomingMessage, res: ServerResponse, endpoint: HealthEndpoint, readiness: Readiness): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(req, res, 405, { status: 'error', message: `${endpoint} answers GET and HEAD only` }, { allow: 'GET, HEAD' });
    return;
  }
  if (endpoint === 'healthz') {
    sendJson(req, res, 200, { status: 'ok' });
    return;
  }
  const report = await readiness.check();
  sendJson(req, res, report.ready ? 200 : 503, { status: report.ready ? 'ready' : 'not ready', checks: report.checks });
}
