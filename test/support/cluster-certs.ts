// A throw-away certificate authority for the TLS cluster test, made with the machine's `openssl`
// (node:crypto makes keys but not X.509 certificates): the CA, a certificate for 127.0.0.1 and
// localhost that the Temporal services present as servers and to each other as clients, and a
// client certificate. EC P-256 keys, which both Go's TLS and the SDK's rustls accept; valid 2 days.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterTlsFiles } from './cluster.js';

function openssl(args: string[], cwd: string): void {
  const result = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (result.error) throw new Error(`openssl is needed to make test certificates: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.trim()}`);
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A key and a certificate `name`.pem / `name`.key signed by the CA, with the given extensions. */
function signed(dir: string, name: string, subject: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(['req', ...KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      `${name}.pem`,
      '-extfile',
      `${name}.ext`,
    ],
    dir,
  );
}

export function makeTestCertificates(dir: string): ClusterTlsFiles {
  openssl(
    [
      'req',
      '-x509',
      ...KEY,
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=pixelmill test CA',
      '-addext',
      'basicConstraints=critical,CA:true',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  signed(
    dir,
    'server',
    '/CN=localhost',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  signed(dir, 'client', '/CN=pixelmill test client', 'extendedKeyUsage=clientAuth\n');
  return {
    caFile: join(dir, 'ca.pem'),
    serverCertFile: join(dir, 'server.pem'),
    serverKeyFile: join(dir, 'server.key'),
    clientCertFile: join(dir, 'client.pem'),
    clientKeyFile: join(dir, 'client.key'),
  };
}
