// A database for one pull request: a fork of production as it is now, small and tagged DEV.
// `pulumi destroy` of the PR's stack stops the fork (Tiger Cloud keeps it, paused).
import * as pulumi from "@pulumi/pulumi";
import { ServiceFork } from "pulumi-tigercloud";

export = async () => {
  const config = new pulumi.Config();
  const pr = config.requireNumber("prNumber");

  const db = new ServiceFork(`pr-${pr}`, {
    sourceServiceId: config.require("sourceServiceId"),
    forkStrategy: "NOW",
    name: `pr-${pr}`,
    cpuMillis: 1000,
    memoryGbs: 4,
    environmentTag: "DEV",
    createTimeout: "45m",
  });

  return {
    serviceId: db.serviceId,
    // postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require, secret; `up` returns once
    // a login works. Read it with `pulumi stack output --show-secrets databaseUrl`, or hand it to
    // an app as a secret (see the README).
    databaseUrl: db.connectionUri,
  };
};
