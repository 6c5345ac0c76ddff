// A stand-in for this project's GitHub releases, on loopback, for the suites that let the engine
// download the provider plugin as it does for a user who never installed it. It speaks what the
// engine asks GitHub (githubSource in the Pulumi SDK's go/common/workspace/plugins.go): the latest
// release's tag, a release's assets by tag, and each asset, served from a folder; and records every
// request, so that a test can say what the engine fetched. HTTPS, as the engine asks a github://
// source over HTTPS only: its certificate is trusted by the engine through SSL_CERT_FILE (and by a
// Node.js client through NODE_EXTRA_CA_CERTS). Given a token, it also takes a release's publishing
// as GitHub's REST API does (scripts/release.js): a release made, assets uploaded to its upload_url,
// an unfinished asset removed, each write with the token alone.
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as https from "https";
import type { AddressInfo } from "net";
import * as os from "os";
import * as path from "path";

/** Where the plugin is downloaded from, as the schema names it (pluginDownloadURL), and so the SDKs. */
export const PLUGIN_DOWNLOAD_URL = "github://api.github.com/tigercloud/pulumi-tigercloud";
const REPO = "/repos/tigercloud/pulumi-tigercloud";

/** The machine's certificate authorities, where Go looks for them on Linux (crypto/x509's root_linux.go). */
const SYSTEM_ROOTS = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/ca-bundle.pem",
  "/etc/pki/tls/cacert.pem",
  "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
  "/etc/ssl/cert.pem",
];

export interface ReleaseRequest {
  method: string;
  path: string;
}

export interface ReleaseServer {
  /** https://127.0.0.1:PORT */
  url: string;
  /** A file of the machine's certificate authorities and this server's, for SSL_CERT_FILE or NODE_EXTRA_CA_CERTS. */
  certificates: string;
  /** The release's assets now: each name with its SHA-256, as uploaded (none before the release is made). */
  assets(): { name: string; sha256: string }[];
  /** Where an asset's bytes are kept. */
  assetFile(name: string): string;
  /** The next `count` uploads fail (a 502 after the body came), as a connection lost half-way would. */
  failUploads(count: number): void;
  /** Each request, in the order it came. */
  requests(): ReleaseRequest[];
  /**
   * The environment that sends the engine here for this project's plugin alone, as GitHub: the
   * override of PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES, whose regexp the engine matches against its
   * source's URL (PluginDescriptor.GetSource: pluginDownloadURLOverridesParsed.get(source.URL())),
   * this project's own and no other (the engine's default, github://api.github.com/pulumi, stays
   * as it is); and SSL_CERT_FILE, the machine's authorities and this server's certificate. The engine
   * then asks for the latest release when the program names no version, the release's assets by
   * tag, and the asset.
   */
  githubEnv(): Record<string, string>;
  close(): Promise<void>;
}

/**
 * Serves the files of `assets` as the assets of release v`version`:
 *   GET /repos/tigercloud/pulumi-tigercloud/releases/latest    {"tag_name": "v`version`"}
 *   GET /repos/tigercloud/pulumi-tigercloud/releases/tags/v`version`    its assets, each with its URL
 *   GET /releases/download/v`version`/ASSET    the file
 * and anything else a 404.
 */
export async function releaseServer(assets: string, version: string, publishing?: { token: string }): Promise<ReleaseServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-release-"));
  const [key, cert] = certificate();
  const roots = SYSTEM_ROOTS.find((f) => fs.existsSync(f));
  const bundle = path.join(dir, "roots.pem");
  fs.writeFileSync(bundle, `${roots ? fs.readFileSync(roots, "utf8").trimEnd() + "\n" : ""}${cert}`);

  const log: ReleaseRequest[] = [];
  const tag = `v${version}`;
  const downloads = `/releases/download/${tag}/`;
  let url = "";
  /** The release, once made: a folder given up front holds its assets already (for the engine's suites). */
  /** An asset's SHA-256 is computed once (its file never changes): hashing the six archives at every
   *  request held this process's event loop, the simulator's too, for seconds on a busy machine. */
  type Asset = { id: number; name: string; file: string; state: "uploaded" | "starter"; sha256?: string };
  let release: { id: number; assets: Asset[] } | undefined;
  let nextId = 1;
  const folder = (name: string) => path.join(assets, name);
  if (!publishing)
    release = {
      id: nextId++,
      assets: fs
        .readdirSync(assets)
        .filter((name) => !name.startsWith(".") && fs.statSync(folder(name)).isFile())
        .map((name) => ({ id: nextId++, name, file: folder(name), state: "uploaded" })),
    };
  let failing = 0;
  const sha256 = (bytes: Buffer) => crypto.createHash("sha256").update(bytes).digest("hex");
  const digestOf = (a: Asset) => (a.sha256 ??= sha256(fs.readFileSync(a.file)));
  const assetJson = (a: Asset) => ({
    id: a.id,
    name: a.name,
    state: a.state,
    size: fs.statSync(a.file).size,
    digest: `sha256:${digestOf(a)}`,
    url: `${url}${downloads}${encodeURIComponent(a.name)}`,
    browser_download_url: `${url}${downloads}${encodeURIComponent(a.name)}`,
  });
  const releaseJson = () => ({
    id: release?.id,
    tag_name: tag,
    upload_url: `${url}/uploads${REPO}/releases/${release?.id}/assets{?name,label}`,
    assets: (release?.assets ?? []).map(assetJson),
  });
  const server = https.createServer({ key, cert }, (req, res) => {
    const requested = new URL(req.url ?? "/", "https://release.invalid");
    const pathname = requested.pathname;
    log.push({ method: req.method ?? "", path: pathname });
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(status === 204 ? undefined : JSON.stringify(body));
    };
    const notFound = () => answer(404, { message: "Not Found" });
    const body = () =>
      new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => resolve(Buffer.concat(chunks)));
      });
    if (req.method === "GET" && pathname === `${REPO}/releases/latest`) return release ? answer(200, { tag_name: tag }) : notFound();
    if (req.method === "GET" && pathname === `${REPO}/releases/tags/${tag}`) return release ? answer(200, releaseJson()) : notFound();
    if (req.method === "GET" && pathname.startsWith(downloads)) {
      let name = "";
      try {
        name = decodeURIComponent(pathname.slice(downloads.length));
      } catch {
        // Not a name: a 404 below.
      }
      const asset = release?.assets.find((a) => a.name === name && a.state === "uploaded");
      if (!asset) return notFound();
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": fs.statSync(asset.file).size });
      return fs.createReadStream(asset.file).pipe(res);
    }
    // What remains is publishing, the token's alone.
    if (!publishing || req.headers.authorization !== `Bearer ${publishing.token}`)
      return publishing && req.method !== "GET" ? answer(401, { message: "Bad credentials" }) : notFound();
    if (req.method === "POST" && pathname === `${REPO}/releases`) {
      void body().then((b) => {
        const asked = JSON.parse(b.toString()) as { tag_name?: string };
        if (asked.tag_name !== tag || release) return answer(422, { message: "Validation Failed", errors: [{ code: "already_exists" }] });
        release = { id: nextId++, assets: [] };
        answer(201, releaseJson());
      });
      return;
    }
    const upload = new RegExp(`^/uploads${REPO}/releases/(\\d+)/assets$`).exec(pathname);
    if (req.method === "POST" && upload && release && Number(upload[1]) === release.id) {
      const name = requested.searchParams.get("name") ?? "";
      void body().then((b) => {
        if (!/^[\w.-]+$/.test(name)) return answer(422, { message: "Validation Failed" });
        if (release?.assets.some((a) => a.name === name))
          return answer(422, { message: "Validation Failed", errors: [{ code: "already_exists" }] });
        const asset: Asset = { id: nextId++, name, file: folder(name), state: "starter", sha256: sha256(b) };
        release?.assets.push(asset);
        fs.writeFileSync(asset.file, b);
        if (failing > 0) {
          failing--;
          return answer(502, { message: "Server Error" });
        }
        asset.state = "uploaded";
        answer(201, assetJson(asset));
      });
      return;
    }
    const removed = new RegExp(`^${REPO}/releases/assets/(\\d+)$`).exec(pathname);
    if (req.method === "DELETE" && removed && release) {
      const asset = release.assets.find((a) => a.id === Number(removed[1]));
      if (!asset) return notFound();
      release.assets = release.assets.filter((a) => a !== asset);
      fs.rmSync(asset.file, { force: true });
      return answer(204, undefined);
    }
    return notFound();
  });
  // An idle connection kept a minute, not Node's 5 s: a client that reuses one just as the server
  // closes it gets a reset, not an answer, and fetch sends a POST (an upload) no second time
  // (nodejs/undici#3141). Between its uploads the release hashes and reads the next archive, seconds
  // on a busy machine. GitHub keeps connections longer than 5 s too.
  server.keepAliveTimeout = 60_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    certificates: bundle,
    assets: () => (release?.assets ?? []).filter((a) => a.state === "uploaded").map((a) => ({ name: a.name, sha256: digestOf(a) })),
    assetFile: (name) => folder(name),
    failUploads: (count) => {
      failing = count;
    },
    requests: () => log.map((r) => ({ ...r })),
    githubEnv: () => ({
      PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES: `^${PLUGIN_DOWNLOAD_URL.replace(/\./g, "\\.")}$=github://${new URL(url).host}/tigercloud/pulumi-tigercloud`,
      SSL_CERT_FILE: bundle,
    }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

/** A new key and a self-signed certificate for 127.0.0.1 (its subjectAltName, which Go requires), both PEM. */
function certificate(): [key: string, cert: string] {
  const pem = execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
      ...["-keyout", "-", "-out", "-", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
  );
  const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n/.exec(pem)?.[0];
  const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/.exec(pem)?.[0];
  if (!key || !cert) throw new Error("openssl made no self-signed certificate");
  return [key, cert];
}
