using System.Collections.Generic;
using System.Linq;
using Pulumi;
using TigerCloud = TigerData.TigerCloud;

return await Deployment.RunAsync(() => 
{
    var config = new Config();
    // The VPC's ID
    var vpcId = config.Require("vpcId");
    var analytics = new TigerCloud.VpcName("analytics", new()
    {
        VpcId = vpcId,
        Name = "analytics-vpc",
    });

    return new Dictionary<string, object?>
    {
        ["cidr"] = analytics.Cidr,
    };
});

