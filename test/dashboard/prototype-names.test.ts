/**
 * The dashboard API with server names that are Object.prototype members: an
 * unknown `toString` is 404 (not configured), never a 400 from treating
 * Object.prototype.toString as a config entry. No server process is started.
 */
import { request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpController, type McpController } from '../../src/controller.js';
import { startDashboard, type Dashboard } from '../../src/dashboard/server.js';

let tmp: string;
let controller: McpController;
let dashboard: Dashboard;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'mcpr-dash-proto-'));
  controller = createMcpController({
    cwd: tmp,
    sources: [],
    approvals: join(tmp, 'approvals.json'),
    env: { PATH: process.env.PATH, HOME: tmp, XDG_CONFIG_HOME: tmp },
    watch: false,
  });
  await controller.addRuntimeServer('alpha', { command: 'never-run', disabled: true });
  await controller.start();
  dashboard = await startDashboard(controller);
});

afterAll(async () => {
  await dashboard?.close();
  await controller?.dispose();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

function post(path: string, body: unknown): Promise<{ status: number; body: string }> {
  const url = new URL(dashboard.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: Number(url.port), path, method: 'POST', headers: { host: url.host, 'content-type': 'application/json', 'x-dashboard-token': dashboard.token } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('POST /api/{approve,reject,reconnect} with prototype-member names', () => {
  for (const action of ['approve', 'reject', 'reconnect']) {
    for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      it(`${action} "${name}" is 404 naming the server`, async () => {
        const r = await post(`/api/${action}`, { server: name });
        expect(r.status).toBe(404);
        expect(JSON.parse(r.body).error).toContain(`no MCP server named "${name}" is configured`);
      });
    }
  }
});
