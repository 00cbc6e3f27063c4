// Which addresses may receive the API key besides the base URL's: BFL answers a submit with a
// polling_url on whichever regional host took the task (api.us1.bfl.ai, api.eu.bfl.ai...; "do
// not rebuild it or swap the host"), so the client polls hosts it was not configured with. It
// trusts, with the base URL's scheme:
// - when the base is BFL's own (a host of bfl.ai), any host of bfl.ai, on the base's port;
// - for a loopback base (the emulator, a local proxy), any loopback host on the same port;
// and nothing else: any other base (a gateway on a shared domain, an IP, one label) trusts its own
// origin only, since its siblings may be anybody's.
//
// The registrable domain is the last two labels, or three under a two-letter country code whose
// second level is a generic one (example.co.uk): the cases a base URL meets without the full
// public suffix list, erring towards trusting less.

const LOOPBACK_NAMES = new Set(['localhost', '[::1]']);
/** BFL's own domain: its regional hosts are its subdomains. */
const BFL_DOMAIN = 'bfl.ai';
const GENERIC_SECOND_LEVEL = new Set(['ac', 'co', 'com', 'edu', 'gov', 'ne', 'net', 'or', 'org']);

export function isLoopbackHost(hostname: string): boolean {
  return (
    LOOPBACK_NAMES.has(hostname) ||
    hostname.endsWith('.localhost') ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}

function isIpAddress(hostname: string): boolean {
  return hostname.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}

/** The base host's registrable domain, or undefined when it has none to share (an IP, one label). */
export function registrableDomain(hostname: string): string | undefined {
  if (isIpAddress(hostname)) return undefined;
  const labels = hostname.replace(/\.$/, '').split('.');
  if (labels.length < 2) return undefined;
  const [second, top] = labels.slice(-2) as [string, string];
  const underCountry = top.length === 2 && GENERIC_SECOND_LEVEL.has(second);
  if (underCountry) return labels.length >= 3 ? labels.slice(-3).join('.') : undefined;
  return labels.slice(-2).join('.');
}

/** The trust test for ApiHttp: may the key go to `url`, given the base URL? */
export function bflTrustsOrigin(base: URL): (url: URL) => boolean {
  const domain = registrableDomain(base.hostname);
  const loopback = isLoopbackHost(base.hostname);
  return (url) => {
    if (url.origin === base.origin) return true;
    if (url.protocol !== base.protocol || url.port !== base.port) return false;
    if (url.username !== '' || url.password !== '') return false;
    if (loopback) return isLoopbackHost(url.hostname);
    if (domain !== BFL_DOMAIN) return false;
    return url.hostname === domain || url.hostname.endsWith(`.${domain}`);
  };
}
