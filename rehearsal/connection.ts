// A session on the database a rehearsal watches, from its URL (DATABASE_URL). TLS as the URL's
// sslmode asks: require (Tiger Cloud's) encrypts without verifying the certificate, as libpq does;
// verify-ca and verify-full verify it; without one (prefer), TLS where the server offers it.
export interface Connection {
  query<Row extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>;
  end(): Promise<void>;
}

export async function connect(url: string, applicationName: string): Promise<Connection> {
  const { Client } = require("pg") as typeof import("pg");
  const parsed = new URL(url);
  const sslmode = parsed.searchParams.get("sslmode") ?? "prefer";
  parsed.searchParams.delete("sslmode");
  const open = async (ssl: false | { rejectUnauthorized: boolean }) => {
    const client = new Client({
      connectionString: parsed.toString(),
      ssl,
      application_name: applicationName,
      connectionTimeoutMillis: 30_000,
    });
    client.on("error", () => undefined);
    await client.connect();
    return client;
  };
  const tls = { rejectUnauthorized: sslmode.startsWith("verify") };
  const client =
    sslmode === "disable" || sslmode === "allow"
      ? await open(false)
      : sslmode === "prefer"
        ? await open(tls).catch((err: Error) => (/does not support SSL/i.test(err.message) ? open(false) : Promise.reject(err)))
        : await open(tls);
  return {
    query: async <Row extends object>(text: string, params?: readonly unknown[]) =>
      (await client.query<Row>(text, params ? [...params] : undefined)).rows,
    end: () => client.end().catch(() => undefined),
  };
}
