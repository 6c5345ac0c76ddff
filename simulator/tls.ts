// The certificate of the services' databases: self-signed for 127.0.0.1, made by openssl, as TLS is
// required (as in production) and the simulator ships no key.
import { execFileSync } from "child_process";

/** A new key and a self-signed certificate for 127.0.0.1, both PEM. */
export function selfSignedCertificate(): [key: string, cert: string] {
  const pem = execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      "-",
      "-out",
      "-",
      "-days",
      "30",
      "-subj",
      "/CN=127.0.0.1",
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
  );
  const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n/.exec(pem)?.[0];
  const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/.exec(pem)?.[0];
  if (!key || !cert) throw new Error("openssl made no self-signed certificate");
  return [key, cert];
}
