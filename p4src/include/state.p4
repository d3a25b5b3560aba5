/* p4mcc switch program: data-plane state shared by ingress and egress.
 *
 * These externs are instantiated at top level because ingress (IGMP
 * snooping, aggregation) writes the membership state that egress (pruning)
 * reads. Their P4Runtime names are the bare names below. Register indices
 * are bit<32> (v1model). None of these is needed by the controller for
 * correctness: BMv2 cannot read or write registers over P4Runtime; counters
 * and meters it can. */
#ifndef P4MCC_STATE_P4
#define P4MCC_STATE_P4

/* ---- group membership (igmp.p4 writes, egress reads) ---- */
/* Bit p set: port p has a member of group gidx. Index gidx. */
register<bit<64>>(MAX_GROUPS) member_bitmap;
/* Time (us) of the last report from port p for group gidx.
 * Index gidx * MEMBER_PORTS + p. */
register<bit<48>>(MAX_GROUPS * MEMBER_PORTS) member_ts;
/* Time (us) of the last report for group gidx from any port: when it is
 * older than the membership timeout every port of the group is stale. */
register<bit<48>>(MAX_GROUPS) group_last_report;
/* Time (us) this switch last sent a join for gidx toward its upstream. */
register<bit<48>>(MAX_GROUPS) upstream_last_join;

/* ---- MTCP-style aggregation (aggregation.p4) ---- */
/* Latest summary from port p for session sidx: cum_ack ++ min_cwnd ++
 * max_twnd ++ adv_wnd. Index sidx * AGG_K + p. */
register<bit<128>>(MAX_SESSIONS * AGG_K) agg_summary;
/* Bit p set: agg_summary holds a summary from port p. Index sidx. */
register<bit<32>>(MAX_SESSIONS) agg_valid;
/* The fold last sent upstream (same packing). Index sidx. */
register<bit<128>>(MAX_SESSIONS) agg_last_sent;
/* 1 once agg_last_sent holds a fold. Index sidx. */
register<bit<1>>(MAX_SESSIONS) agg_sent_valid;
/* Time (us) the last fold went upstream. Index sidx. */
register<bit<48>>(MAX_SESSIONS) agg_sent_at;

/* ---- feedback filtering (filtering.p4) ---- */
/* Index sidx; sidx + MAX_SESSIONS: the round of TFMCC reports without an RTT. */
register<bit<1>>(2 * MAX_SESSIONS)  filter_valid;        /* a round is open */
register<bit<16>>(2 * MAX_SESSIONS) filter_round;        /* TFMCC fb_round */
register<bit<48>>(2 * MAX_SESSIONS) filter_round_start;  /* VLMCC window start (us) */
register<bit<32>>(2 * MAX_SESSIONS) filter_worst;        /* lowest rate forwarded */

/* ---- stamp echo of absorbed feedback (echo.p4) ---- */
register<bit<1>>(MAX_SESSIONS) echo_held;   /* echo_acc holds absorbed echoes */
register<bit<8>>(MAX_SESSIONS) echo_acc;    /* their combination (stamp byte) */
register<bit<8>>(MAX_SESSIONS) echo_share_acc;  /* their share echoes' combination */

/* ---- congestion stamp (egress.p4): per egress port, index = port ---- */
/* Start (egress_global_timestamp, us) of the port's current rate window. */
register<bit<48>>(PORT_SPACE) stamp_win_start;
/* Bytes that left the port in the current window. */
register<bit<32>>(PORT_SPACE) stamp_win_bytes;
/* Bytes that left it in the last complete window (0 after an idle window). */
register<bit<32>>(PORT_SPACE) stamp_last_bytes;

/* ---- max-min share estimate (share.p4): per egress port, index = port ---- */
/* Flow slots, index port * SHARE_SLOTS + hash(flow): epoch tag (16) ++
 * heavy this epoch (1) ++ heavy in the tag's previous epoch (1) ++ 0 (14)
 * ++ bytes this epoch (32). A slot whose tag is not the port's is empty. */
register<bit<64>>(SHARE_PORTS * SHARE_SLOTS) share_slots;
/* The port's epoch: start (us), tag (0: none begun yet; never 0 after). */
register<bit<48>>(SHARE_PORTS) share_epoch_start;
register<bit<16>>(SHARE_PORTS) share_epoch_tag;
/* The current epoch's counts: slots in use, heavy slots, light bytes. */
register<bit<16>>(SHARE_PORTS) share_flows;
register<bit<16>>(SHARE_PORTS) share_heavy;
register<bit<32>>(SHARE_PORTS) share_light;
/* The same counts of the last complete epoch (what the codes come from). */
register<bit<16>>(SHARE_PORTS) share_last_flows;
register<bit<16>>(SHARE_PORTS) share_last_heavy;
register<bit<32>>(SHARE_PORTS) share_last_light;
/* Bytes a flow sends in this epoch to count as heavy (half the last share
 * or less, down to a quarter). */
register<bit<32>>(SHARE_PORTS) share_threshold;
/* Share codes of the last complete epoch (hosts.wire.Share): for a flow
 * counted heavy in it, and for one that was not (one more heavy flow). */
register<bit<8>>(SHARE_PORTS) share_code;
register<bit<8>>(SHARE_PORTS) share_code_new;

/* ---- policing ---- */
/* Per ingress port, packets/s; colour RED drops p4mcc feedback.
 * Unconfigured meters return GREEN (no policing). */
meter(PORT_SPACE, MeterType.packets) feedback_meter;

/* ---- counters (all readable over P4Runtime) ---- */
/* Per port, index = port number. */
counter(PORT_SPACE, CounterType.packets_and_bytes) port_rx;          /* every packet in */
counter(PORT_SPACE, CounterType.packets_and_bytes) port_tx;          /* every packet out */
counter(PORT_SPACE, CounterType.packets_and_bytes) port_data_rx;     /* multicast data in */
counter(PORT_SPACE, CounterType.packets_and_bytes) port_data_tx;     /* multicast replicas out */
counter(PORT_SPACE, CounterType.packets_and_bytes) port_feedback_rx; /* p4mcc feedback in */
counter(PORT_SPACE, CounterType.packets) port_joins;                 /* IGMP join records in */
counter(PORT_SPACE, CounterType.packets) port_leaves;                /* IGMP leave records in */
counter(PORT_SPACE, CounterType.packets) port_drops;                 /* ingress drops, by ingress port */
counter(PORT_SPACE, CounterType.packets) port_pruned;                /* replicas pruned, by egress port */
counter(PORT_SPACE, CounterType.packets) port_parser_errors;         /* malformed, by ingress port */
counter(PORT_SPACE, CounterType.packets) port_policed;               /* meter RED, by ingress port */
counter(PORT_SPACE, CounterType.packets) port_stamped;               /* data packets stamped, by egress port */
/* Per group, index = gidx. */
counter(MAX_GROUPS, CounterType.packets_and_bytes) group_data_rx;
counter(MAX_GROUPS, CounterType.packets_and_bytes) group_data_tx;
counter(MAX_GROUPS, CounterType.packets) group_pruned;
counter(MAX_GROUPS, CounterType.packets) group_joins;
counter(MAX_GROUPS, CounterType.packets) group_leaves;
/* Per session, index = sidx. */
counter(MAX_SESSIONS, CounterType.packets) session_feedback_rx;
counter(MAX_SESSIONS, CounterType.packets) session_feedback_fwd;
counter(MAX_SESSIONS, CounterType.packets) session_feedback_absorbed;
/* Per drop reason (DROP_* in defs.p4). */
counter(DROP_REASONS, CounterType.packets) drop_reasons;

#endif
