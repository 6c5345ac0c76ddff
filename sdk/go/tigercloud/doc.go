// Fork Tiger Cloud (formerly Timescale Cloud) services, set their high availability, name VPCs.
package tigercloud
