/* p4mcc: the multicast switch program (P4_16, v1model).
 *
 * Multicast replication with IGMP join state kept in the data plane, IGMP
 * proxying toward each group's source, MTCP-style feedback aggregation,
 * TFMCC/VLMCC feedback filtering (carrying the stamp echoes of what they
 * absorb), the congestion stamp, policing and counters. Everything is
 * configured at run time by the controller (tables, PRE groups, meter
 * rates); docs/p4-program.md lists what it must configure.
 *
 * Compile: p4c --target bmv2 --arch v1model -I p4src/include p4src/mcc.p4
 * (or p4mcc check p4src/mcc.p4 -I p4src/include). */
#include <core.p4>
#include <v1model.p4>

#include "include/defs.p4"
#include "include/headers.p4"
#include "include/state.p4"
#include "include/parser.p4"
#include "include/igmp.p4"
#include "include/echo.p4"
#include "include/aggregation.p4"
#include "include/filtering.p4"
#include "include/ingress.p4"
#include "include/share.p4"
#include "include/egress.p4"

V1Switch(MccParser(),
         MccVerifyChecksum(),
         MccIngress(),
         MccEgress(),
         MccComputeChecksum(),
         MccDeparser()) main;
