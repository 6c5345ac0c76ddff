# A VPC's name, kept as the program says
config vpcId string {
  description = "The VPC's ID"
}

resource analytics "tigercloud:index:VpcName" {
  vpcId = vpcId
  name  = "analytics-vpc"
}

output cidr {
  value = analytics.cidr
}
