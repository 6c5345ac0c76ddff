// Where the connection settings come from, resolved each time a client is made, in this order:
// settings passed explicitly; stack config (`tigercloud:*`); the environment (`TIGER_*`).
import { ConfigurationError } from "./errors";

export const DEFAULT_API_URL = "https://console.cloud.tigerdata.com/public/api/v1";

export interface ConnectionSettings {
  apiUrl?: string | undefined;
  apiKey?: string | undefined;
  publicKey?: string | undefined;
  secretKey?: string | undefined;
  /** Lets the credentials travel over plain `http://` to a host that is not loopback. */
  allowInsecureHttp?: boolean | undefined;
}

/**
 * Stack config keys and environment variables, one row per setting (the README's table); each
 * also a setting of the plugin's provider (its name here), described for its schema.
 */
export const SETTING_SOURCES = {
  apiKey: {
    config: "tigercloud:apiKey",
    env: "TIGER_API_KEY",
    secret: true,
    description: "An API key (a bearer token, which expires); wins over a key pair. Default: TIGER_API_KEY.",
  },
  publicKey: {
    config: "tigercloud:publicKey",
    env: "TIGER_PUBLIC_KEY",
    secret: false,
    description:
      "The key pair's public half (the long-lived credential the console makes; use it in pipelines). Default: TIGER_PUBLIC_KEY.",
  },
  secretKey: {
    config: "tigercloud:secretKey",
    env: "TIGER_SECRET_KEY",
    secret: true,
    description: "The key pair's secret half. Default: TIGER_SECRET_KEY.",
  },
  apiUrl: {
    config: "tigercloud:apiUrl",
    env: "TIGER_API_URL",
    secret: false,
    description: `The API's URL. Default: TIGER_API_URL, then ${DEFAULT_API_URL}.`,
  },
  allowInsecureHttp: {
    config: "tigercloud:allowInsecureHttp",
    env: "TIGER_ALLOW_INSECURE_HTTP",
    secret: false,
    boolean: true,
    description:
      "true allows an http:// API URL to a host other than loopback (the key travels in clear). Default: TIGER_ALLOW_INSECURE_HTTP, then false.",
  },
  // Read by the resources when they check their inputs, not by the client.
  projectId: {
    config: "tigercloud:projectId",
    env: "TIGER_PROJECT_ID",
    secret: false,
    description: "The project of every resource that sets none. Default: TIGER_PROJECT_ID, then the project the key belongs to.",
  },
  verifyReferences: {
    config: "tigercloud:verifyReferences",
    env: "TIGER_VERIFY_REFERENCES",
    secret: false,
    boolean: true,
    description: "false stops preview from reading the objects resources refer to. Default: TIGER_VERIFY_REFERENCES, then true.",
  },
  requireMasking: {
    config: "tigercloud:requireMasking",
    env: "TIGER_REQUIRE_MASKING",
    secret: false,
    boolean: true,
    description:
      "true refuses a fork of a service tagged PROD that declares neither masking rules nor a reason to stay unmasked: preview fails " +
      "naming the fork, and so does `up`. A fork of a fork descended from PROD is held to the same, unless its source is a masked fork " +
      "whose mark `up` reads in the new fork before publishing it. Default: TIGER_REQUIRE_MASKING, then false.",
  },
} as const satisfies Record<
  keyof ConnectionSettings | "projectId" | "verifyReferences" | "requireMasking",
  { config: string; env: string; secret: boolean; boolean?: true; description: string }
>;

/** The settings that are switches: true or false. */
export const isSwitch = (name: keyof typeof SETTING_SOURCES): boolean => "boolean" in SETTING_SOURCES[name];

export type Credentials = { kind: "bearer"; apiKey: string } | { kind: "basic"; publicKey: string; secretKey: string };

export interface ResolvedSettings {
  apiUrl: string;
  credentials: Credentials;
}

/** Reads a `key -> value` lookup such as the dynamic provider's `configure()` config. */
export type ConfigLookup = (key: string) => string | undefined;

function pick(
  explicit: string | undefined,
  config: ConfigLookup,
  env: NodeJS.ProcessEnv,
  name: keyof typeof SETTING_SOURCES,
): string | undefined {
  const source = SETTING_SOURCES[name];
  const value = explicit ?? config(source.config) ?? env[source.env];
  return value === undefined || value === "" ? undefined : value;
}

/** The project ID alone: resources default it from config or environment at plan time. */
export function resolveProjectId(
  explicit: string | undefined,
  config: ConfigLookup,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return pick(explicit, config, env, "projectId");
}

/** A switch's value: `fallback` when unset; anything but "true" or "false" fails, naming where it is set. */
function resolveSwitch(
  name: "verifyReferences" | "requireMasking",
  fallback: boolean,
  config: ConfigLookup,
  env: NodeJS.ProcessEnv,
): boolean {
  const value = pick(undefined, config, env, name)?.trim().toLowerCase();
  if (value === undefined) return fallback;
  if (value === "true" || value === "false") return value === "true";
  const { config: key, env: variable } = SETTING_SOURCES[name];
  throw new ConfigurationError(`${key} / ${variable} must be "true" or "false".`);
}

/** Whether check reads the objects a resource refers to (default true). */
export const resolveVerifyReferences = (config: ConfigLookup, env: NodeJS.ProcessEnv = process.env): boolean =>
  resolveSwitch("verifyReferences", true, config, env);

/** Whether a fork of a PROD service must be masked or say why not (default false). */
export const resolveRequireMasking = (config: ConfigLookup, env: NodeJS.ProcessEnv = process.env): boolean =>
  resolveSwitch("requireMasking", false, config, env);

/**
 * Where the credentials in use come from, by stack config key or environment variable (never the
 * value), in the order resolveSettings picks them; half a key pair is named too. Undefined when
 * no credential is set at all.
 */
export function credentialSource(
  config: ConfigLookup,
  env: NodeJS.ProcessEnv = process.env,
  configWord = "stack config",
): string | undefined {
  const from = (name: "apiKey" | "publicKey" | "secretKey") => {
    const { config: key, env: variable } = SETTING_SOURCES[name];
    if (pick(undefined, config, {}, name) !== undefined) return `${configWord} ${key}`;
    if (pick(undefined, () => undefined, env, name) !== undefined) return `environment variable ${variable}`;
    return undefined;
  };
  const apiKey = from("apiKey");
  if (apiKey) return apiKey;
  const [publicKey, secretKey] = [from("publicKey"), from("secretKey")];
  return publicKey && secretKey ? `${publicKey} with ${secretKey}` : (publicKey ?? secretKey);
}

/**
 * Where the project of a resource that sets none comes from (a config key or a variable), as
 * credentialSource names the credentials; undefined when neither sets one.
 */
export function projectIdSource(
  config: ConfigLookup,
  env: NodeJS.ProcessEnv = process.env,
  configWord = "stack config",
): string | undefined {
  const { config: key, env: variable } = SETTING_SOURCES.projectId;
  if (pick(undefined, config, {}, "projectId") !== undefined) return `${configWord} ${key}`;
  if (pick(undefined, () => undefined, env, "projectId") !== undefined) return `environment variable ${variable}`;
  return undefined;
}

export function resolveSettings(
  explicit: ConnectionSettings = {},
  config: ConfigLookup = () => undefined,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedSettings {
  const apiKey = pick(explicit.apiKey, config, env, "apiKey");
  const publicKey = pick(explicit.publicKey, config, env, "publicKey");
  const secretKey = pick(explicit.secretKey, config, env, "secretKey");
  const apiUrl = pick(explicit.apiUrl, config, env, "apiUrl") ?? DEFAULT_API_URL;

  let credentials: Credentials;
  if (apiKey) {
    credentials = { kind: "bearer", apiKey };
  } else if (publicKey && secretKey) {
    credentials = { kind: "basic", publicKey, secretKey };
  } else if (publicKey || secretKey) {
    const missing = publicKey ? SETTING_SOURCES.secretKey : SETTING_SOURCES.publicKey;
    throw new ConfigurationError(
      `Tiger Cloud credentials are incomplete: a public/secret key pair needs both; set ${missing.config} (stack config, secret) or ${missing.env}.`,
    );
  } else {
    throw new ConfigurationError(
      "No Tiger Cloud credentials. Set an API key with `pulumi config set --secret tigercloud:apiKey ...` or TIGER_API_KEY, " +
        "or a key pair with tigercloud:publicKey + tigercloud:secretKey (secret) or TIGER_PUBLIC_KEY + TIGER_SECRET_KEY.",
    );
  }

  let url: URL;
  try {
    url = new URL(apiUrl);
  } catch {
    throw new ConfigurationError(`tigercloud:apiUrl / TIGER_API_URL is not a URL: "${apiUrl}".`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ConfigurationError(`tigercloud:apiUrl / TIGER_API_URL must be http(s), got "${url.protocol}".`);
  }
  if (url.protocol === "http:" && !isLoopback(url.hostname) && !insecureHttpAllowed(explicit, config, env)) {
    const { config: key, env: variable } = SETTING_SOURCES.allowInsecureHttp;
    throw new ConfigurationError(
      `tigercloud:apiUrl / TIGER_API_URL is plain http to ${url.host}: the API key would travel in clear, readable by anyone on the way. ` +
        `Use https, or, knowing that, opt in with \`pulumi config set ${key} true\` or ${variable}=true.`,
    );
  }

  return { apiUrl: apiUrl.replace(/\/+$/, ""), credentials };
}

/** Traffic to these hosts never leaves the machine, so plain http exposes nothing. */
function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

function insecureHttpAllowed(explicit: ConnectionSettings, config: ConfigLookup, env: NodeJS.ProcessEnv): boolean {
  if (explicit.allowInsecureHttp !== undefined) return explicit.allowInsecureHttp;
  const value = pick(undefined, config, env, "allowInsecureHttp")?.trim().toLowerCase();
  if (value === undefined || value === "false") return false;
  if (value === "true") return true;
  const { config: key, env: variable } = SETTING_SOURCES.allowInsecureHttp;
  throw new ConfigurationError(`${key} / ${variable} must be "true" or "false".`);
}

/** The values that must never appear in an error, a log line or state. */
export function secretsOf(credentials: Credentials): string[] {
  const values = credentials.kind === "bearer" ? [credentials.apiKey] : [credentials.publicKey, credentials.secretKey];
  return values.filter((v) => v.length >= 4);
}
