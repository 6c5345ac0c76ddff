// A database for one pull request: a fork of production as it is now, small and tagged DEV.
// `pulumi destroy` of the PR's stack stops the fork (Tiger Cloud keeps it, paused).
import * as pulumi from "@pulumi/pulumi";
import { ServiceFork } from "pulumi-tigercloud";

export = async () => {
  const config = new pulumi.Config();
  const pr = config.requireNumber("prNumber");
  // A fork made for this PR in the console or with the tiger CLI: manage it instead of forking.
  const adoptServiceId = config.get("adoptServiceId");

  const db = new ServiceFork(`pr-${pr}`, {
    sourceServiceId: config.require("sourceServiceId"),
    forkStrategy: "NOW",
    name: `pr-${pr}`,
    cpuMillis: 1000,
    memoryGbs: 4,
    environmentTag: "DEV",
    createTimeout: "45m",
    // Stopped at night by the nightly workflow (`./pr-stack.sh pause`), data kept; `up` starts it.
    paused: config.getBoolean("paused") ?? false,
    ...(adoptServiceId ? { adoptServiceId } : {}),
  });

  return {
    serviceId: db.serviceId,
    // postgresql://tsdbadmin:<password>@<host>:<port>/tsdb?sslmode=require, secret; `up` returns once
    // a login works. Read it with `pulumi stack output --show-secrets databaseUrl`, or hand it to
    // an app as a secret (see the README).
    databaseUrl: db.connectionUri,
  };
};
