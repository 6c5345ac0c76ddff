using System.Collections.Generic;
using System.Linq;
using Pulumi;
using TigerCloud = TigerData.TigerCloud;

return await Deployment.RunAsync(() => 
{
    var config = new Config();
    // The production service
    var sourceServiceId = config.Require("sourceServiceId");
    // When to copy it at (RFC 3339), such as 2026-11-01T09:30:00Z
    var before = config.Require("before");
    var investigation = new TigerCloud.ServiceFork("investigation", new()
    {
        SourceServiceId = sourceServiceId,
        Name = "incident-investigation",
        ForkStrategy = TigerCloud.ForkStrategy.Pitr,
        TargetTime = before,
    });

    return new Dictionary<string, object?>
    {
        ["host"] = investigation.Host,
        ["port"] = investigation.Port,
    };
});

