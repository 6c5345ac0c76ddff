using System.Collections.Generic;
using System.Linq;
using Pulumi;
using TigerCloud = TigerData.TigerCloud;

return await Deployment.RunAsync(() => 
{
    var config = new Config();
    // The service
    var serviceId = config.Require("serviceId");
    var ha = new TigerCloud.ServiceHA("ha", new()
    {
        ServiceId = serviceId,
        ReplicaCount = 2,
        SyncReplicaCount = 1,
    });

    return new Dictionary<string, object?>
    {
        ["status"] = ha.Status,
    };
});

