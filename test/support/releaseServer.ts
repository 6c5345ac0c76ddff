// A stand-in for this project's GitHub releases, on loopback, for the suites that let the engine
// download the provider plugin as it does for a user who never installed it. It speaks what the
// engine asks GitHub (githubSource in the Pulumi SDK's go/common/workspace/plugins.go): the latest
// release's tag, a release's assets by tag, and each asset, served from a folder; and records every
// request, so that a test can say what the engine fetched. HTTPS, as the engine asks a github://
// source over HTTPS only: its certificate is trusted by the engine through SSL_CERT_FILE.
import { execFileSync } from "child_process";
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
export async function releaseServer(assets: string, version: string): Promise<ReleaseServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tigercloud-release-"));
  const [key, cert] = certificate();
  const roots = SYSTEM_ROOTS.find((f) => fs.existsSync(f));
  const bundle = path.join(dir, "roots.pem");
  fs.writeFileSync(bundle, `${roots ? fs.readFileSync(roots, "utf8").trimEnd() + "\n" : ""}${cert}`);

  const log: ReleaseRequest[] = [];
  const tag = `v${version}`;
  const downloads = `/releases/download/${tag}/`;
  let url = "";
  /** The asset files: plain names of files in the folder. */
  const assetNames = () => fs.readdirSync(assets).filter((name) => !name.startsWith(".") && fs.statSync(path.join(assets, name)).isFile());
  const server = https.createServer({ key, cert }, (req, res) => {
    const pathname = new URL(req.url ?? "/", "https://release.invalid").pathname;
    log.push({ method: req.method ?? "", path: pathname });
    const json = (body: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "GET" && pathname === `${REPO}/releases/latest`) return json({ tag_name: tag });
    if (req.method === "GET" && pathname === `${REPO}/releases/tags/${tag}`) {
      return json({
        tag_name: tag,
        assets: assetNames().map((name) => ({ name, url: `${url}${downloads}${encodeURIComponent(name)}` })),
      });
    }
    let name = "";
    try {
      if (req.method === "GET" && pathname.startsWith(downloads)) name = decodeURIComponent(pathname.slice(downloads.length));
    } catch {
      // Not a name: a 404 below.
    }
    if (!assetNames().includes(name)) {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end(JSON.stringify({ message: "Not Found" }));
    }
    const file = path.join(assets, name);
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": fs.statSync(file).size });
    fs.createReadStream(file).pipe(res);
  });
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
