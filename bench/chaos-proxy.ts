// A worker cut off from the Temporal frontend, as by a network partition: the worker reaches the
// frontend through this TCP proxy, which the harness can cut and heal. Cut, it forwards nothing in
// either direction and reads nothing more (bytes wait in the kernel's buffers, so the sender's
// writes stall as they would on a link that drops every packet), accepts new connections without
// forwarding them, and keeps a side's close from the other until the link heals: neither end
// hears of the other, which is what makes a partition harder than a server that went away (that
// one answers with resets). Healed, everything held flows again, as TCP retransmits would deliver
// it. No iptables is needed (the machines running the tests have none), and only the one worker's
// connections are affected: the API, the object store and the other workers are not.
import { createServer, connect, type Server, type Socket } from 'node:net';

interface Link {
  client: Socket;
  upstream: Socket | undefined;
  /** Closes seen while cut, passed on when it heals. */
  pendingClose: Set<Socket>;
}

export class PartitionProxy {
  private readonly links = new Set<Link>();
  private isCut = false;
  /** Connections accepted in all, open when last cut (what the cut froze), accepted while cut. */
  readonly counts = { connections: 0, openAtCut: 0, acceptedWhileCut: 0 };

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
    /** host:port of the proxy, what the worker is given as TEMPORAL_ADDRESS. */
    readonly address: string,
  ) {}

  /** Listens on 127.0.0.1 and a free port, forwarding to `target` (host:port). */
  static async start(target: string): Promise<PartitionProxy> {
    const [host, port] = target.split(':');
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const { port: listening } = server.address() as { port: number };
    const proxy = new PartitionProxy(server, { host: host!, port: Number(port) }, `127.0.0.1:${listening}`);
    server.on('connection', (client: Socket) => proxy.accept(client));
    return proxy;
  }

  private accept(client: Socket): void {
    this.counts.connections++;
    if (this.isCut) this.counts.acceptedWhileCut++;
    const link: Link = { client, upstream: undefined, pendingClose: new Set() };
    this.links.add(link);
    client.on('error', () => undefined);
    client.once('close', () => this.closed(link, client));
    if (this.isCut) client.pause();
    else this.dial(link);
  }

  /** Connects the link upstream and forwards both ways, with backpressure, unless cut. */
  private dial(link: Link): void {
    const upstream = connect(this.target.port, this.target.host);
    link.upstream = upstream;
    upstream.on('error', () => undefined);
    upstream.once('close', () => this.closed(link, upstream));
    this.forward(link.client, upstream);
    this.forward(upstream, link.client);
  }

  private forward(from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (!this.isCut) from.resume();
    });
  }

  /** One side closed: the other hears of it now, or when a cut heals. */
  private closed(link: Link, side: Socket): void {
    if (this.isCut) {
      link.pendingClose.add(side);
      return;
    }
    link.client.destroy();
    link.upstream?.destroy();
    this.links.delete(link);
  }

  /** Stops every byte, both ways, until heal(). */
  cut(): void {
    this.isCut = true;
    this.counts.openAtCut = this.links.size;
    for (const link of this.links) {
      link.client.pause();
      link.upstream?.pause();
    }
  }

  /** Lets everything held flow again, connects what was accepted meanwhile, passes on closes. */
  heal(): void {
    this.isCut = false;
    for (const link of [...this.links]) {
      if (link.pendingClose.size > 0) {
        this.closed(link, link.client);
        continue;
      }
      if (!link.upstream) this.dial(link);
      link.client.resume();
      link.upstream?.resume();
    }
  }

  async close(): Promise<void> {
    for (const link of this.links) {
      link.client.destroy();
      link.upstream?.destroy();
    }
    this.links.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
