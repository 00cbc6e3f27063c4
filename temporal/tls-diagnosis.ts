// Why a connection to Temporal failed, when TLS is the reason. The SDK reports a refused client
// certificate, an untrusted server certificate or a TLS/plain-text mismatch as "Failed to connect
// before the deadline" (the gRPC channel retries the handshake until then). One TLS handshake of
// our own with the same settings reads the server's actual answer, which names the setting to fix.
import { isIP } from 'node:net';
import { connect, type ConnectionOptions } from 'node:tls';
import type { TLSConfig } from '@temporalio/client';

const CLIENT_CERT_REFUSED = new Set([
  'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
]);
const SERVER_UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
]);

/** How long the probe waits for the server's verdict: an alert comes right after the handshake. */
const PROBE_MS = 3_000;
const ALERT_WAIT_MS = 300;

function splitAddress(address: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  return match ? { host: match[1]!, port: Number(match[2]) } : { host: address, port: 7233 };
}

/** Settles with the error code of a TLS handshake (and its aftermath), 'ok', or 'timeout'. */
function handshake(options: ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ ...options, ALPNProtocols: ['h2'] });
    const done = (outcome: string): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => done('timeout'), PROBE_MS);
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
    // TLS 1.3: a server that wants a client certificate says so after the client's Finished.
    socket.once('secureConnect', () => setTimeout(() => done('ok'), ALERT_WAIT_MS));
  });
}

/**
 * What to fix, in a sentence, when TLS explains why `address` could not be reached with `tls`
 * (undefined or false: plain text); undefined when it does not.
 */
export async function diagnoseTls(
  address: string,
  tls: TLSConfig | boolean | undefined,
): Promise<string | undefined> {
  const { host, port } = splitAddress(address);
  if (tls === undefined || tls === false) {
    // Plain text to a server that speaks only TLS: the handshake of a TLS client succeeds.
    const outcome = await handshake({ host, port, rejectUnauthorized: false });
    return outcome === 'ok' || CLIENT_CERT_REFUSED.has(outcome)
      ? 'the server speaks TLS: set TEMPORAL_TLS=true (or a profile with a [tls] section)'
      : undefined;
  }
  const config = tls === true ? {} : tls;
  const servername = config.serverNameOverride ?? (isIP(host) ? undefined : host);
  const clientCert = config.clientCertPair;
  const outcome = await handshake({
    host,
    port,
    ...(servername ? { servername } : {}),
    ...(config.serverRootCACertificate ? { ca: Buffer.from(config.serverRootCACertificate) } : {}),
    ...(clientCert ? { cert: Buffer.from(clientCert.crt), key: Buffer.from(clientCert.key) } : {}),
  });
  if (CLIENT_CERT_REFUSED.has(outcome)) {
    return clientCert
      ? `the server refused the client certificate (${outcome}): is it signed by a CA the cluster accepts?`
      : `the server requires a client certificate (${outcome}): set TEMPORAL_TLS_CLIENT_CERT_PATH and ` +
          `TEMPORAL_TLS_CLIENT_KEY_PATH (or a profile's tls.client_cert_path and tls.client_key_path)`;
  }
  if (SERVER_UNTRUSTED.has(outcome)) {
    return `the server's certificate is not trusted (${outcome}): set TEMPORAL_TLS_SERVER_CA_CERT_PATH to its CA`;
  }
  if (outcome === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `the server's certificate does not name ${servername ?? host}: set TEMPORAL_TLS_SERVER_NAME to a name it has`;
  }
  if (outcome === 'ERR_SSL_WRONG_VERSION_NUMBER' || outcome === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') {
    return 'the server does not speak TLS: set TEMPORAL_TLS=false (an API key turns TLS on by default)';
  }
  return undefined;
}
