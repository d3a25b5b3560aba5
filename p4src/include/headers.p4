/* p4mcc switch program: packet headers, metadata and the digest type.
 * The p4mcc message headers (mcc_*_t) come from the generated wire.p4. */
#ifndef P4MCC_HEADERS_P4
#define P4MCC_HEADERS_P4

#include "wire.p4"

/* Sent to the controller ahead of the frame on the CPU port. */
@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<8> reason;       /* PUNT_* */
    bit<7> _pad;
}

/* Prepended by the controller to a frame it injects on the CPU port:
 * flood = 1 sends it to the flood group (every port in it); otherwise it
 * leaves on egress_port. */
@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<1> flood;
    bit<6> _pad;
}

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* ARP for Ethernet/IPv4 (RFC 826), 28 bytes. */
header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

/* The one IPv4 option word IGMP carries: Router Alert (RFC 2113), IHL 6. */
header ipv4_option_t {
    bit<32> value;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* The first 8 bytes of every IGMP message. For v1/v2 messages and queries
 * `group` is the group address; for an IGMPv3 report (type 0x22) it is
 * reserved(16) ++ number_of_group_records(16). */
header igmp_t {
    bit<8>  type;
    bit<8>  max_resp;
    bit<16> checksum;
    bit<32> group;
}

/* One IGMPv3 group record without sources or auxiliary data, 8 bytes. */
header igmpv3_record_t {
    bit<8>  record_type;
    bit<8>  aux_len;
    bit<16> num_sources;
    bit<32> group;
}

struct headers_t {
    packet_out_t          packet_out;
    packet_in_t           packet_in;
    ethernet_t            ethernet;
    arp_t                 arp;
    ipv4_t                ipv4;
    ipv4_option_t         ipv4_option;
    igmp_t                igmp;
    igmpv3_record_t       rec0;
    igmpv3_record_t       rec1;
    igmpv3_record_t       rec2;
    igmpv3_record_t       rec3;
    udp_t                 udp;
    mcc_common_t          mcc;
    mcc_tfmcc_report_t    tfmcc_report;
    /* MTCP ACK and window update share one 28-byte layout. */
    mcc_mtcp_ack_t        mtcp_ack;
    mcc_vlmcc_challenge_t vlmcc_challenge;
}

/* Membership change reported to the controller (observability only). */
struct membership_digest_t {
    bit<32> group;      /* IPv4 group address */
    bit<16> port;       /* ingress port of the report */
    bit<8>  event;      /* EVENT_JOIN / EVENT_LEAVE */
    bit<64> members;    /* member-port bitmap of the group afterwards */
    bit<48> timestamp;  /* ingress_global_timestamp, microseconds */
}

/* Result of one group record (or a data packet's group lookup). */
struct record_result_t {
    bit<1>  hit;           /* group configured */
    bit<32> gidx;
    bit<16> mgid;
    bit<1>  has_upstream;
    bit<9>  upstream_port;
    bit<1>  want_forward;  /* proxy wants this record sent upstream */
    bit<1>  is_join;
    bit<1>  changed;       /* this port's membership changed */
    bit<64> members;       /* bitmap after the update */
}

/* The running MTCP-style fold. */
struct fold_t {
    bit<32> cum_ack;   /* min */
    bit<32> min_cwnd;  /* min */
    bit<32> max_twnd;  /* max */
    bit<32> adv_wnd;   /* min */
}

struct metadata_t {
    bit<48> now;                 /* ingress_global_timestamp (us) */
    bit<9>  in_port;
    bit<3>  kind;                /* KIND_* : what egress must do */
    bit<1>  drop;                /* ingress decided to drop */
    bit<32> drop_reason;
    bit<8>  punt_reason;
    bit<32> fwd_dst;             /* IPv4 key of ipv4_fwd (dst, or ARP tpa) */
    bit<1>  igmp_unsupported;    /* parser: IGMPv3 record with sources, > 4 records */
    bit<1>  rewritten;           /* body rewritten: recompute the IPv4 csum */
    /* switch_config */
    bit<16> flood_mgid;
    bit<48> membership_timeout;  /* us; 0 = never age */
    bit<48> proxy_refresh;       /* us; 0 = never refresh upstream */
    /* multicast data */
    bit<32> gidx;
    bit<16> port_set_base;       /* port_sets: PRE group of the empty port set; 0 = off */
    bit<64> port_set_ports;      /* port_sets: the ports the port-set groups cover */
    /* sessions */
    bit<2>  assist;
    bit<32> sidx;
    bit<32> session_gidx;
    bit<48> filter_window;       /* us, VLMCC challenge rounds */
    /* congestion stamp (egress) */
    bit<1>  port_rated;          /* port_rate hit: the port's rate is known */
    bit<32> port_rate_units;     /* its rate, 40 kb/s units */
    bit<1>  stamp_on;            /* stamp_sessions hit: stamp this data packet */
    bit<8>  epoch_shift;         /* share epoch: STAMP_WINDOW_US << epoch_shift */
    bit<8>  share;               /* this port's share code for the packet's flow */
    bit<16> share_h;             /* share_heavy_log key: heavy slots of the last epoch */
    bit<16> share_k;             /* share_collisions key: slots in use then */
    /* digest */
    bit<1>  digest_pending;
    membership_digest_t digest;
}

#endif
