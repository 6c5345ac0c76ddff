// The one rule for "gone", for every read and delete: an object is gone only when the API itself
// says so (its JSON 404, or a DELETED status) and the API is evidently the right one (the
// project's service list answers). An HTML or empty 404 from a proxy or a wrong URL, a 5xx or a
// network failure is an error: taking it for "gone" would drop a live object from state.
import type { Service, Vpc } from "../api/schemas";
import { DELETED } from "../api/statuses";
import type { TigerCloudClient } from "../api/client";
import { NotConfirmedGoneError, NotFoundError } from "../errors";
import { messageOf } from "../text";

/**
 * The service, or undefined when the API says, confirmed, that it no longer exists. With a
 * deadline (a destroy's), neither read nor its retries outlive it.
 */
export async function serviceUnlessGone(
  client: TigerCloudClient,
  projectId: string,
  serviceId: string,
  deadline?: number,
): Promise<Service | undefined> {
  let notFound: NotFoundError;
  try {
    const service = await client.getService(projectId, serviceId, { deadline });
    return service.status === DELETED ? undefined : service;
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    notFound = err;
  }
  const listed = (await projectServices(client, projectId, `service ${serviceId}`, notFound, deadline)).find(
    (s) => s.service_id === serviceId,
  );
  if (listed && listed.status !== DELETED) {
    throw new NotConfirmedGoneError(
      `GET of service ${serviceId} answered 404, but the project's service list still holds it (${listed.status}); it is not taken for gone. Run the command again.`,
      { cause: notFound },
    );
  }
  return undefined;
}

/** The VPC, or undefined when the API says twice, with its service list answering, that it does not exist. */
export async function vpcUnlessGone(client: TigerCloudClient, projectId: string, vpcId: string): Promise<Vpc | undefined> {
  try {
    return await client.getVpc(projectId, vpcId);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    await projectServices(client, projectId, `VPC ${vpcId}`, err);
  }
  // There is no list of VPCs to look in: a second read must agree.
  try {
    return await client.getVpc(projectId, vpcId);
  } catch (err) {
    if (err instanceof NotFoundError && err.apiAnswered) return undefined;
    throw err;
  }
}

/** The project's services, read to show that the API and the project are the right ones. */
async function projectServices(
  client: TigerCloudClient,
  projectId: string,
  what: string,
  notFound: NotFoundError,
  deadline?: number,
): Promise<Service[]> {
  if (!notFound.apiAnswered) throw notFound; // its message says the URL or a proxy may be wrong
  try {
    return await client.listServices(projectId, { deadline });
  } catch (err) {
    throw new NotConfirmedGoneError(
      `The API answered 404 for ${what}, but listing project ${projectId}'s services to confirm it failed, so it is not taken for gone: ${messageOf(err)}`,
      { cause: err, listFailure: err },
    );
  }
}
