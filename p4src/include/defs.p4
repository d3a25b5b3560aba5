/* p4mcc switch program: compile-time constants, drop reasons, parser errors.
 *
 * Every size here is a compile-time constant because v1model register,
 * counter and meter arrays have a fixed size; everything else (which groups,
 * ports, sessions exist) is configured at run time through tables, PRE
 * groups and meter rates. Override with -D at compile time if needed. */
#ifndef P4MCC_DEFS_P4
#define P4MCC_DEFS_P4

/* The CPU port (simple_switch_grpc --cpu-port). 511 is BMv2's drop port. */
#ifndef MCC_CPU_PORT
#define MCC_CPU_PORT 510
#endif
const bit<9> CPU_PORT = MCC_CPU_PORT;

/* Counters and meters indexed by port cover the whole 9-bit port space. */
#define PORT_SPACE 512

/* Ports whose group membership is tracked: 0 .. MEMBER_PORTS-1. One bit
 * per port in a 64-bit membership bitmap per group. */
#define MEMBER_PORTS 64
const bit<9> MEMBER_PORT_LIMIT = MEMBER_PORTS;

/* Group slots (gidx 0 .. MAX_GROUPS-1), assigned by the controller. */
#ifndef MAX_GROUPS
#define MAX_GROUPS 256
#endif

/* Session slots (sidx 0 .. MAX_SESSIONS-1), assigned by the controller. */
#ifndef MAX_SESSIONS
#define MAX_SESSIONS 64
#endif

/* K: the MTCP-style fold covers at most AGG_K downstream ports per session,
 * namely ports 0 .. AGG_K-1 (a port's summary slot is its port number).
 * Feedback from ports >= AGG_K passes upstream unfolded (counted). The fold
 * code in aggregation.p4 is unrolled for exactly this K; changing it means
 * adding or removing FoldSlot instances there and resizing the port bitmaps
 * (agg_valid in state.p4, mask and pending in aggregation.p4) to K bits.
 * 32: a dumbbell's 32 receivers behind one switch are all folded (with 16,
 * the other 16 receivers' ACKs crossed the reverse bottleneck together). */
#define AGG_K 32
const bit<9> AGG_PORT_LIMIT = AGG_K;

#define DROP_REASONS 32

/* Drop reasons: index of the drop_reasons counter. */
const bit<32> DROP_PARSER_ERROR      = 1;  /* malformed / truncated (parser) */
const bit<32> DROP_BAD_CHECKSUM      = 2;  /* IPv4 header checksum wrong */
const bit<32> DROP_TRUNCATED         = 3;  /* IPv4 total length beyond frame */
const bit<32> DROP_NOT_IPV4_OR_ARP   = 4;  /* other EtherTypes (IPv6, LLDP...) */
const bit<32> DROP_IPV4_MISS         = 5;  /* no unicast route */
const bit<32> DROP_UNKNOWN_GROUP     = 6;  /* multicast to an unconfigured group */
const bit<32> DROP_POLICED           = 7;  /* feedback meter RED */
const bit<32> DROP_FILTERED          = 8;  /* report not worse than this round's worst */
const bit<32> DROP_ABSORBED          = 9;  /* MTCP summary folded, fold unchanged */
const bit<32> DROP_IGMP_CONSUMED     = 10; /* IGMP report/leave handled, nothing to propagate */
const bit<32> DROP_IGMP_QUERY        = 11; /* IGMP query from a port (not flooded) */
const bit<32> DROP_ARP_INVALID       = 12; /* ARP other than Ethernet/IPv4 */
const bit<32> DROP_NO_FLOOD_GROUP    = 13; /* flood needed but flood_mgid is 0 */
const bit<32> DROP_CONFIG            = 14; /* explicit drop action of a table */
const bit<32> DROP_NO_MEMBERS        = 15; /* multicast data, no member port (port_sets on) */

/* Reasons carried in packet_in.reason. */
const bit<8> PUNT_IGMP_UNSUPPORTED = 1;  /* IGMPv3 with sources / > 4 records */
const bit<8> PUNT_TABLE            = 2;  /* a table chose to_cpu */

/* What ingress decided a packet is; carried to egress in metadata. */
const bit<3> KIND_OTHER      = 0;
const bit<3> KIND_MCAST_DATA = 1;  /* IPv4 multicast data: prune per port */
const bit<3> KIND_FLOOD      = 2;  /* ARP / packet_out flood: skip ingress port */
const bit<3> KIND_PUNT       = 3;  /* to the CPU port with packet_in */

/* Membership events in digests. */
const bit<8> EVENT_JOIN  = 1;
const bit<8> EVENT_LEAVE = 2;

/* IGMP message types (RFC 2236, RFC 3376). */
const bit<8> IGMP_QUERY     = 0x11;
const bit<8> IGMP_V1_REPORT = 0x12;
const bit<8> IGMP_V2_REPORT = 0x16;
const bit<8> IGMP_V2_LEAVE  = 0x17;
const bit<8> IGMP_V3_REPORT = 0x22;

/* IGMPv3 group record types (RFC 3376 4.2.12). */
const bit<8> IGMPV3_MODE_IS_INCLUDE = 1;
const bit<8> IGMPV3_MODE_IS_EXCLUDE = 2;
const bit<8> IGMPV3_TO_INCLUDE      = 3;
const bit<8> IGMPV3_TO_EXCLUDE      = 4;
const bit<8> IGMPV3_ALLOW_NEW       = 5;  /* with no sources: changes nothing */

/* Record kinds after classification. */
const bit<2> REC_NONE  = 0;
const bit<2> REC_JOIN  = 1;
const bit<2> REC_LEAVE = 2;
const bit<2> REC_DATA  = 3;  /* data packet: group lookup only */

/* Assistance modes (sessions table). */
const bit<2> ASSIST_NONE      = 0;
const bit<2> ASSIST_AGGREGATE = 1;
const bit<2> ASSIST_FILTER    = 2;

/* Congestion stamp (egress.p4, docs/stamp.md). A port's departure rate is
 * measured over windows of STAMP_WINDOW_US; 25.6 ms makes 128 bytes per
 * window one Quick-Start rate unit of 40 kb/s (RFC 4782 3.1), so a byte
 * count becomes a rate in those units by a shift of STAMP_UNIT_SHIFT. */
const bit<48> STAMP_WINDOW_US  = 25600;
#define STAMP_UNIT_SHIFT 7
const bit<4>  STAMP_NO_LIMIT   = 15;   /* spare code of a port without a rate */

/* Max-min share estimate (share.p4, docs/stamp.md "The share"). Ports
 * 0 .. SHARE_PORTS-1 with a port_rate entry keep SHARE_SLOTS hashed flow
 * slots each; an epoch is STAMP_WINDOW_US << epoch_shift (port_rate's
 * parameter, at most SHARE_MAX_SHIFT: 1.6384 s). */
#define SHARE_PORTS 64
#define SHARE_SLOTS 256
const bit<9> SHARE_PORT_LIMIT = SHARE_PORTS;
const bit<8> SHARE_MAX_SHIFT  = 6;
const bit<8> SHARE_NONE       = 0;     /* share code: no estimate */

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<8>  IPPROTO_IGMP   = 2;
const bit<8>  IPPROTO_UDP    = 17;

error {
    MccBadIpv4,      /* version != 4 or IHL < 5 */
    MccBadLength,    /* UDP / message length fields inconsistent */
    MccShortMessage  /* message shorter than its fixed body */
}

#endif
