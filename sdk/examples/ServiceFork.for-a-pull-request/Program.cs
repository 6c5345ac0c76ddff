using System.Collections.Generic;
using System.Linq;
using Pulumi;
using TigerCloud = TigerData.TigerCloud;

return await Deployment.RunAsync(() => 
{
    var config = new Config();
    // The production service to fork
    var sourceServiceId = config.Require("sourceServiceId");
    // The pull request's number
    var prNumber = config.RequireInt32("prNumber");
    var prDatabase = new TigerCloud.ServiceFork("prDatabase", new()
    {
        SourceServiceId = sourceServiceId,
        Name = $"pr-{prNumber}",
        ForkStrategy = TigerCloud.ForkStrategy.LastSnapshot,
        CpuMillis = "1000",
        MemoryGbs = "4",
        OnDestroy = TigerCloud.OnDestroy.Delete,
    });

    return new Dictionary<string, object?>
    {
        ["serviceId"] = prDatabase.ServiceId,
        ["databaseUrl"] = prDatabase.ConnectionUri,
    };
});

