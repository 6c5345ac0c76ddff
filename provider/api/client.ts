// The Tiger Cloud API client (the package's "./client" export): one thin method per endpoint over
// the one request helper (./request.ts), which encodes, authenticates, retries what is safe to
// retry, parses every answer with zod, and turns every failure into an error of ../errors.
import { z } from "zod";
import { ApiError, ConnectionError, ForkOutcomeUnknownError, TigerCloudError } from "../errors";
import { type ConfigLookup, type ConnectionSettings, type ResolvedSettings, resolveSettings, secretsOf } from "../settings";
import { fragmentRedactor, wholeRedactor } from "./redaction";
import { type ApiRequest, ApiRequester, apiPath, CLIENT_DEFAULTS, type CallOptions, type ClientOptions } from "./request";
import {
  type AuthInfo,
  AuthInfoSchema,
  type EnvironmentTag,
  type ForkServiceRequest,
  MessageResponseSchema,
  type MessageResponse,
  RenameResponseSchema,
  type RenameResponse,
  type ResizeRequest,
  type Service,
  ServiceSchema,
  type SetHARequest,
  type Vpc,
  VpcSchema,
} from "./schemas";

export { notAForkOf } from "./forks";
export { secretRedactor } from "./redaction";
export {
  apiPath,
  CLIENT_DEFAULTS,
  type CallOptions,
  type ClientOptions,
  type ClientTuning,
  MIN_ATTEMPT_TIMEOUT_MS,
  parseRetryAfter,
  type RetryEvent,
} from "./request";

/** The answers, each with the words an error names it by. */
const SERVICE = { schema: ServiceSchema, expected: "a Service" };
const SERVICES = { schema: z.array(ServiceSchema), expected: "an array of Service" };
const VPC = { schema: VpcSchema, expected: "a Vpc" };
const AUTH_INFO = { schema: AuthInfoSchema, expected: "an AuthInfo (a type, and an API key's or OAuth user's info)" };
/** A success with nothing to say (202, 204): an empty body or JSON (not read); anything else is not the API's answer. */
const NO_CONTENT = { schema: z.unknown(), expected: "no content (an empty body, or JSON)", noContent: true };

type Method = ApiRequest<unknown>["method"];

/**
 * Every method answers with a promise: a refused argument (an ID that cannot be a path segment,
 * see apiPath) is a rejection like any failure, and nothing is sent.
 */
export class TigerCloudClient {
  readonly apiUrl: string;
  /** Removes every credential, and every run of 6 or more of its characters, from a text that came from outside. */
  readonly redact: (text: string) => string;
  private readonly requester: ApiRequester;

  constructor(settings: ResolvedSettings, options: Partial<ClientOptions> = {}) {
    this.apiUrl = settings.apiUrl;
    // Credentials live only in this closure: not a property, so that no serializer, logger or
    // error formatter that walks the client can reach them.
    const token =
      settings.credentials.kind === "bearer"
        ? settings.credentials.apiKey
        : Buffer.from(`${settings.credentials.publicKey}:${settings.credentials.secretKey}`).toString("base64");
    const authorization = `${settings.credentials.kind === "bearer" ? "Bearer" : "Basic"} ${token}`;
    const secrets = [...secretsOf(settings.credentials), token, ...(options.secrets ?? [])];
    const redactWhole = wholeRedactor(secrets);
    const redactFragments = fragmentRedactor(secrets);
    this.redact = (text) => redactFragments(redactWhole(text));
    this.requester = new ApiRequester(this.apiUrl, { ...CLIENT_DEFAULTS, ...options }, () => authorization, redactWhole, this.redact);
  }

  /** Never retried after it may have been sent: a retry could create a second fork (retry "fork"). */
  async forkService(projectId: string, serviceId: string, body: ForkServiceRequest, call?: CallOptions): Promise<Service> {
    const path = apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/forkService`;
    // The answer carries the fork's initial password: an error never quotes it.
    const request = { operation: "forkService", method: "POST" as const, path, body, ...SERVICE, retry: "fork" as const, quoteBody: false };
    return this.requester.request(request, call).catch((err: unknown) => {
      throw forkFailure(err, projectId, serviceId, body.name);
    });
  }

  async setHA(projectId: string, serviceId: string, body: SetHARequest, call?: CallOptions): Promise<Service> {
    return this.safe("setHA", "POST", apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/setHA`, SERVICE, call, body);
  }

  async stop(projectId: string, serviceId: string, call?: CallOptions): Promise<Service> {
    return this.safe("stop", "POST", apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/stop`, SERVICE, call);
  }

  /**
   * Deletes a service: 202 and no body promised; DELETING, then DELETED or a 404. Final: its data
   * goes. Retried like stop: a repeat meets DELETING (202) or the 404 of a service already gone.
   */
  async deleteService(projectId: string, serviceId: string, call?: CallOptions): Promise<void> {
    await this.safe("deleteService", "DELETE", apiPath`/projects/${{ projectId }}/services/${{ serviceId }}`, NO_CONTENT, call);
  }

  /** Starts a stopped service: PAUSED, then RESUMING, then READY. Idempotent, so retried like stop. */
  async start(projectId: string, serviceId: string, call?: CallOptions): Promise<Service> {
    return this.safe("start", "POST", apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/start`, SERVICE, call);
  }

  /** Renames a service in place. Idempotent (the same name twice is harmless), so retried. */
  async renameService(projectId: string, serviceId: string, name: string, call?: CallOptions): Promise<Service> {
    const path = apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/rename`;
    return this.safe("renameService", "POST", path, SERVICE, call, { name });
  }

  /** Resizes a service in place (a transition, then READY). The same size twice is harmless, so retried. */
  async resize(projectId: string, serviceId: string, body: ResizeRequest, call?: CallOptions): Promise<Service> {
    return this.safe("resize", "POST", apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/resize`, SERVICE, call, body);
  }

  /** Tags a service DEV or PROD. Idempotent, so retried. */
  async setEnvironment(projectId: string, serviceId: string, environment: EnvironmentTag, call?: CallOptions): Promise<MessageResponse> {
    const path = apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/setEnvironment`;
    return this.safe("setEnvironment", "POST", path, { schema: MessageResponseSchema, expected: "a message" }, call, { environment });
  }

  /**
   * Sets the password of the service's tsdbadmin role (204, no body). Make the client with the
   * password among its `secrets`, so no error can show it. Idempotent (the same password), so retried.
   */
  async updatePassword(projectId: string, serviceId: string, password: string, call?: CallOptions): Promise<unknown> {
    const path = apiPath`/projects/${{ projectId }}/services/${{ serviceId }}/updatePassword`;
    return this.safe("updatePassword", "POST", path, NO_CONTENT, call, { password });
  }

  async getService(projectId: string, serviceId: string, call?: CallOptions): Promise<Service> {
    return this.safe("getService", "GET", apiPath`/projects/${{ projectId }}/services/${{ serviceId }}`, SERVICE, call);
  }

  /** Every service of the project, with no filter and no paging. */
  async listServices(projectId: string, call?: CallOptions): Promise<Service[]> {
    return this.safe("listServices", "GET", apiPath`/projects/${{ projectId }}/services`, SERVICES, call);
  }

  /**
   * Who is calling: its `type`, and for an API key (bearer or pair) `api_key`, whose project is the
   * one the key belongs to; a user's OAuth token answers `oauth` instead, which names no project.
   */
  async authInfo(call?: CallOptions): Promise<AuthInfo> {
    return this.safe("authInfo", "GET", "/auth/info", AUTH_INFO, call);
  }

  async getVpc(projectId: string, vpcId: string, call?: CallOptions): Promise<Vpc> {
    return this.safe("getVpc", "GET", apiPath`/projects/${{ projectId }}/vpcs/${{ vpcId }}`, VPC, call);
  }

  async renameVpc(projectId: string, vpcId: string, name: string, call?: CallOptions): Promise<RenameResponse> {
    const path = apiPath`/projects/${{ projectId }}/vpcs/${{ vpcId }}/rename`;
    return this.safe("renameVpc", "POST", path, { schema: RenameResponseSchema, expected: "a Vpc or {message}" }, call, { name });
  }

  /** A request that is safe to repeat (retry "safe"): every endpoint but forkService. */
  private safe<T>(
    operation: string,
    method: Method,
    path: string,
    answer: Pick<ApiRequest<T>, "schema" | "expected" | "noContent">,
    call: CallOptions | undefined,
    body?: object,
  ): Promise<T> {
    return this.requester.request({ operation, method, path, ...(body === undefined ? {} : { body }), ...answer, retry: "safe" }, call);
  }
}

/** A fork that failed after it was sent might exist: say so, unless the API surely refused it. */
function forkFailure(err: unknown, projectId: string, serviceId: string, name: string | undefined): unknown {
  const surelyNothing =
    (err instanceof ApiError && err.status >= 400 && err.status < 500) ||
    (err instanceof ConnectionError && err.connectionRefused) ||
    !(err instanceof TigerCloudError);
  return surelyNothing ? err : new ForkOutcomeUnknownError(projectId, serviceId, name, err as Error);
}

/** A client from explicit settings, then stack config, then the environment. */
export function createClient(
  explicit: ConnectionSettings = {},
  config: ConfigLookup = () => undefined,
  options: Partial<ClientOptions> = {},
): TigerCloudClient {
  return new TigerCloudClient(resolveSettings(explicit, config), options);
}
