// VpcName's lifecycle, called as the engine calls the dynamic provider, against the simulator over
// loopback: every rule of check, diff, create, read, update and delete; and a provider with no
// credentials, which fails before any request.
import { providers } from "../../../../provider/hosts/dynamic/runtime";
import { ConfigurationError } from "../../../../provider/errors";
import { configureProviders, rejectionOf, providerSimForEachTest, P, failuresOf, type Ids } from "../../../support/helpers";
import type { Simulator } from "../../../../simulator";

const vpc = providers.VpcName;

let sim: Simulator;
let ids: Ids;
providerSimForEachTest((current) => ({ sim, ids } = current));

describe("VpcName", () => {
  test.each([
    [{ vpcId: "vpc-1", name: "n" }, "vpcId: vpcId must be a string of digits"],
    [{ vpcId: 2 ** 53 + 2, name: "n" }, "vpcId: vpcId must be a string of digits (it is a number)"],
    [{ vpcId: 12.5, name: "n" }, "vpcId: vpcId must be a string of digits (it is a number)"],
    [{ vpcId: "1234567", name: "" }, "name: name must be 1 to 128 characters"],
    [{ vpcId: "1234567" }, "name: name is required: it must be a string"],
  ])("check %j fails with %s", async (news, expected) => {
    expect(await failuresOf(vpc, news)).toEqual([expected]);
  });

  test("check takes a whole number that holds every digit as those digits (a YAML program's config)", async () => {
    const { inputs, failures } = await vpc.check({}, { __provider: P, projectId: ids.projectId, vpcId: 1234567, name: "n" });
    expect(failures).toEqual([]);
    expect(inputs.vpcId).toBe("1234567");
  });

  test.each([false, true])("create renames then reads back (rename answers a Vpc: %s)", async (answersVpc) => {
    sim.renameAnswersVpc = answersVpc;
    const { inputs } = await vpc.check({}, { __provider: P, vpcId: ids.vpcId, name: "analytics" });
    expect(sim.requests().map((r) => r.operation)).toEqual(["getVpc"]); // check verified the VPC
    sim.clearLog();
    const { id, outs } = await vpc.create(inputs);
    expect(id).toBe(ids.vpcId);
    expect(outs).toEqual({ projectId: ids.projectId, vpcId: ids.vpcId, name: "analytics", cidr: "10.0.0.0/16", regionCode: "us-east-1" });
    expect(sim.requests().map((r) => r.operation)).toEqual(["renameVpc", "getVpc"]);
  });

  test("diff: name is an update; vpc or project a replace", async () => {
    const olds = { __provider: P, projectId: "p", vpcId: "1", name: "a" };
    expect(await vpc.diff("1", olds, { ...olds, name: "b" })).toMatchObject({ changes: true, replaces: [] });
    expect(await vpc.diff("1", olds, { ...olds, vpcId: "2" })).toMatchObject({ replaces: ["vpcId"] });
  });

  test("read shows a rename made elsewhere; 404 is gone; delete calls nothing", async () => {
    sim.outOfBand.renameVpc(ids.projectId, ids.vpcId, "console-name");
    const props = { __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "declared" };
    expect((await vpc.read(ids.vpcId, props)).props).toMatchObject({ name: "console-name" });
    expect(await vpc.read("999", { ...props, vpcId: "999" })).toEqual({});
    sim.clearLog();
    await vpc.delete(ids.vpcId, props);
    expect(sim.requests()).toEqual([]);
  });
});

test("without credentials the provider fails with a ConfigurationError before any request", async () => {
  await configureProviders({ "tigercloud:apiUrl": sim.url });
  const key = process.env.TIGER_API_KEY;
  delete process.env.TIGER_API_KEY;
  try {
    expect(await rejectionOf(vpc.create({ __provider: P, projectId: ids.projectId, vpcId: ids.vpcId, name: "x" }))).toBeInstanceOf(
      ConfigurationError,
    );
    expect(sim.requests()).toEqual([]);
  } finally {
    if (key !== undefined) process.env.TIGER_API_KEY = key;
  }
});
