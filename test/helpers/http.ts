/** A raw HTTP request for tests that check request guards (Host, Origin, method), which fetch would not send as written. */
import { request, type IncomingHttpHeaders } from 'node:http';

/** What came back: the status, the headers and the body as text. */
export interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Send one request to `url` with exactly these headers (a `host` among them replaces the URL's) and `body`. */
export function rawRequest(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}
