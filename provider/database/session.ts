// A PostgreSQL session on a service's database, as tsdbadmin: the one place the provider connects
// (the login wait, a fork's preparation). TLS without verifying the certificate, as
// sslmode=require; node-postgres loaded only when a session opens (the provider's module graph stays
// light for programs that never connect).
import { DATABASE, USERNAME } from "./names";

export interface ServiceDatabase {
  host: string;
  port: number;
  /** A password that cannot be right is sent when it is not known: the answer still says whether the server is up. */
  password: string | undefined;
}

/** What a session offers: queries (parameters always as parameters) and its end. */
export interface Session {
  query<Row extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>;
  end(): Promise<void>;
}

/** A failure as PostgreSQL (or Node.js) reported it: the fields a message may be built from, never its text alone. */
export interface DatabaseFailure {
  /** PostgreSQL's SQLSTATE, or a Node.js error code (ECONNREFUSED). */
  code?: string;
  message?: string;
  schema?: string;
  table?: string;
  column?: string;
  dataType?: string;
  constraint?: string;
  /** Where in the statement, for a syntax error (1-based characters). */
  position?: string;
}

/**
 * Opens a session: connected and logged in within `timeoutMs`, each query then limited to the
 * time `queryTimeoutMs` gives (default: the same).
 */
export async function openSession(db: ServiceDatabase, timeoutMs: number, queryTimeoutMs = timeoutMs): Promise<Session> {
  const { Client } = require("pg") as typeof import("pg");
  const client = new Client({
    host: db.host,
    port: db.port,
    user: USERNAME,
    database: DATABASE,
    password: db.password ?? `unknown-${Date.now()}`,
    ssl: { rejectUnauthorized: false },
    connectionTimeoutMillis: Math.max(1, timeoutMs),
    query_timeout: Math.max(1, queryTimeoutMs),
  });
  client.on("error", () => undefined); // a connection dropped after its last query: nothing to do
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return {
    query: async <Row extends object>(text: string, params?: readonly unknown[]) =>
      (await client.query<Row>(text, params ? [...params] : undefined)).rows,
    end: () => client.end().catch(() => undefined),
  };
}

/** The fields of a failure a session threw (node-postgres' DatabaseError, or a Node.js error). */
export function failureOf(err: unknown): DatabaseFailure {
  const { z } = require("zod") as typeof import("zod");
  const text = z.string().optional().catch(undefined);
  const FailureSchema = z.object({
    code: text,
    message: text,
    schema: text,
    table: text,
    column: text,
    dataType: text,
    constraint: text,
    position: text,
  });
  const parsed = FailureSchema.safeParse(err);
  if (!parsed.success) return { message: String(err) };
  // Only the fields that are there: a failure with no SQLSTATE has no `code` key at all.
  return Object.fromEntries(Object.entries(parsed.data).filter(([, v]) => v !== undefined)) as DatabaseFailure;
}
