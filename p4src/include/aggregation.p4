/* p4mcc switch program: MTCP-style feedback aggregation.
 *
 * For a session configured with assist_aggregate, every MTCP ACK or window
 * update from downstream port p (p < AGG_K) replaces port p's stored
 * summary. The switch then folds the summaries of the session group's
 * member ports (plus p itself):
 *     cum_ack = min, min_cwnd = min, max_twnd = max, adv_wnd = min
 * where a member port that has sent no summary yet counts as cum_ack 0
 * (its receiver may lack everything: a fold must not release for it)
 * and sends upstream one message carrying the fold (flag AGGREGATED) when
 * the fold differs from the last one it sent, or when AGG_REFRESH_US or more
 * have passed since a fold last went up; otherwise the message is absorbed.
 * The refresh is what keeps a session live: the one upstream copy of a fold
 * may be lost, or the sender may need to hear it again after a timeout, and
 * an unchanged fold would otherwise never go up again (docs/assistance.md,
 * "why no loss pattern stalls a session"). The message keeps its type, node_id and echo_ts (those of the
 * receiver that triggered it). Its sack_bitmap is always cleared: it lists
 * what one receiver holds, and the fold speaks for every port, so a bitmap
 * left in place would let the sender release packets other receivers still
 * lack. A fold acknowledges by cum_ack alone (losses are repaired on NACKs).
 * NACKs are never folded: they pass upstream so no reported loss is lost.
 * Nor is an ACK flagged ACKER (ingress.p4): it is the copy the session's
 * acker sends besides its folded ACK, so that its ACKs alone clock the
 * sender's window (pgmcc); it neither reads nor writes the fold's state.
 * The stamp echo of a message that goes up is combined with those of the
 * messages absorbed since the last one went up (echo.p4).
 * A fold keeps its UDP checksum valid: the switch updates it incrementally
 * over every 16-bit word it rewrote (RFC 1624 eqn. 3), so a receiver's
 * kernel (or the simulated host) still drops a fold corrupted on its way
 * up; a checksum of 0 (none sent) stays 0 (docs/wire-format.md). */
#ifndef P4MCC_AGGREGATION_P4
#define P4MCC_AGGREGATION_P4

/* An unchanged fold goes upstream again once this long (us) has passed
 * since the last fold went up. Below the sender's 1 s floor on its
 * retransmission timer (RFC 6298 2.4), so the answers to its first repair
 * after a lost fold can pass; long enough that a switch adds at most two
 * messages a second to a session whose fold does not move. */
#define AGG_REFRESH_US 48w500000

/* One slot of the unrolled fold (no loops in v1model controls). A slot
 * counts if its summary is stored and its port is the ingress port or a
 * member whose membership has not timed out. A member port that has not
 * reported yet (bit set in pending) holds the fold's cum_ack at 0: its
 * receiver may lack every packet, so nothing may be released for it.
 * slot is bit<8> because BMv2 limits a shift amount to 8 bits. */
control FoldSlot(in bit<32> base, in bit<32> mask, in bit<32> pending, in bit<8> slot,
                 in metadata_t meta, inout fold_t f) {
    apply {
        bool counted = ((mask >> slot) & 32w1) == 32w1;
        bool unheard = ((pending >> slot) & 32w1) == 32w1;
        if (counted || unheard) {
            bool fresh = true;
            if (meta.membership_timeout != 0 && (bit<9>)slot != meta.in_port) {
                bit<48> ts;
                member_ts.read(ts, meta.session_gidx * MEMBER_PORTS + (bit<32>)slot);
                fresh = meta.now - ts <= meta.membership_timeout;
            }
            if (fresh && unheard) {
                f.cum_ack = 0;
            } else if (fresh) {
                bit<128> s;
                agg_summary.read(s, base + (bit<32>)slot);
                if (s[127:96] < f.cum_ack) { f.cum_ack = s[127:96]; }
                if (s[95:64] < f.min_cwnd) { f.min_cwnd = s[95:64]; }
                if (s[63:32] > f.max_twnd) { f.max_twnd = s[63:32]; }
                if (s[31:0] < f.adv_wnd) { f.adv_wnd = s[31:0]; }
            }
        }
    }
}

/* RFC 1624 eqn. 3 for one 32-bit field: adds ~old and new, 16 bits at a
 * time, to a running sum whose carries ChecksumUpdate folds at the end. */
control ChecksumDelta32(in bit<32> old, in bit<32> now, inout bit<32> sum) {
    apply {
        sum = sum + (bit<32>)(~old[31:16]) + (bit<32>)(~old[15:0])
                  + (bit<32>)now[31:16] + (bit<32>)now[15:0];
    }
}

/* RFC 1624 eqn. 3: the new checksum from the old and the sum of the
 * rewritten words' terms (at most 26 of them, so two folds take every carry
 * in); a computed 0 is sent as all ones (RFC 768), and a checksum of 0 (the
 * sender sent none) stays 0. Also used by filtering.p4. */
control ChecksumUpdate(in bit<32> delta, inout bit<16> checksum) {
    apply {
        bit<32> sum = (bit<32>)(~checksum) + delta;
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        bit<16> csum = ~sum[15:0];
        if (csum == 0) {
            csum = 0xffff;
        }
        if (checksum != 0) {
            checksum = csum;
        }
    }
}

control Aggregate(inout headers_t hdr, inout metadata_t meta) {
    FeedbackEcho() echo;
    /* The fold's rewritten words: version ++ stamp ++ msg_type ++ flags, the
     * five body fields; share ++ rsvd is added inline. */
    ChecksumDelta32() delta_head;
    ChecksumDelta32() delta_cum_ack;
    ChecksumDelta32() delta_min_cwnd;
    ChecksumDelta32() delta_max_twnd;
    ChecksumDelta32() delta_adv_wnd;
    ChecksumDelta32() delta_sack;
    ChecksumUpdate() udp_checksum;
    /* AGG_K = 32 slots. */
    FoldSlot() fold0;
    FoldSlot() fold1;
    FoldSlot() fold2;
    FoldSlot() fold3;
    FoldSlot() fold4;
    FoldSlot() fold5;
    FoldSlot() fold6;
    FoldSlot() fold7;
    FoldSlot() fold8;
    FoldSlot() fold9;
    FoldSlot() fold10;
    FoldSlot() fold11;
    FoldSlot() fold12;
    FoldSlot() fold13;
    FoldSlot() fold14;
    FoldSlot() fold15;
    FoldSlot() fold16;
    FoldSlot() fold17;
    FoldSlot() fold18;
    FoldSlot() fold19;
    FoldSlot() fold20;
    FoldSlot() fold21;
    FoldSlot() fold22;
    FoldSlot() fold23;
    FoldSlot() fold24;
    FoldSlot() fold25;
    FoldSlot() fold26;
    FoldSlot() fold27;
    FoldSlot() fold28;
    FoldSlot() fold29;
    FoldSlot() fold30;
    FoldSlot() fold31;

    apply {
        if (meta.in_port < AGG_PORT_LIMIT && meta.sidx < MAX_SESSIONS) {
            bit<32> base = meta.sidx * AGG_K;
            agg_summary.write(base + (bit<32>)meta.in_port,
                hdr.mtcp_ack.cum_ack ++ hdr.mtcp_ack.min_cwnd
                ++ hdr.mtcp_ack.max_twnd ++ hdr.mtcp_ack.adv_wnd);
            bit<32> pbit = 32w1 << (bit<8>)meta.in_port;   /* in_port < 32: fits a BMv2 shift */
            bit<32> valid;
            agg_valid.read(valid, meta.sidx);
            valid = valid | pbit;
            agg_valid.write(meta.sidx, valid);
            bit<64> members = 0;
            if (meta.session_gidx < MAX_GROUPS) {
                member_bitmap.read(members, meta.session_gidx);
            } else {
                meta.session_gidx = 0;   /* misconfigured: no members, no ts reads out of range */
            }
            bit<32> mask = valid & (members[31:0] | pbit);
            bit<32> pending = members[31:0] & ~valid;   /* members not heard from yet */

            fold_t f;
            f.cum_ack = 0xffffffff;
            f.min_cwnd = 0xffffffff;
            f.max_twnd = 0;
            f.adv_wnd = 0xffffffff;
            fold0.apply(base, mask, pending, 0, meta, f);
            fold1.apply(base, mask, pending, 1, meta, f);
            fold2.apply(base, mask, pending, 2, meta, f);
            fold3.apply(base, mask, pending, 3, meta, f);
            fold4.apply(base, mask, pending, 4, meta, f);
            fold5.apply(base, mask, pending, 5, meta, f);
            fold6.apply(base, mask, pending, 6, meta, f);
            fold7.apply(base, mask, pending, 7, meta, f);
            fold8.apply(base, mask, pending, 8, meta, f);
            fold9.apply(base, mask, pending, 9, meta, f);
            fold10.apply(base, mask, pending, 10, meta, f);
            fold11.apply(base, mask, pending, 11, meta, f);
            fold12.apply(base, mask, pending, 12, meta, f);
            fold13.apply(base, mask, pending, 13, meta, f);
            fold14.apply(base, mask, pending, 14, meta, f);
            fold15.apply(base, mask, pending, 15, meta, f);
            fold16.apply(base, mask, pending, 16, meta, f);
            fold17.apply(base, mask, pending, 17, meta, f);
            fold18.apply(base, mask, pending, 18, meta, f);
            fold19.apply(base, mask, pending, 19, meta, f);
            fold20.apply(base, mask, pending, 20, meta, f);
            fold21.apply(base, mask, pending, 21, meta, f);
            fold22.apply(base, mask, pending, 22, meta, f);
            fold23.apply(base, mask, pending, 23, meta, f);
            fold24.apply(base, mask, pending, 24, meta, f);
            fold25.apply(base, mask, pending, 25, meta, f);
            fold26.apply(base, mask, pending, 26, meta, f);
            fold27.apply(base, mask, pending, 27, meta, f);
            fold28.apply(base, mask, pending, 28, meta, f);
            fold29.apply(base, mask, pending, 29, meta, f);
            fold30.apply(base, mask, pending, 30, meta, f);
            fold31.apply(base, mask, pending, 31, meta, f);

            bit<128> folded = f.cum_ack ++ f.min_cwnd ++ f.max_twnd ++ f.adv_wnd;
            bit<128> last;
            bit<1> sent;
            bit<48> sent_at;
            agg_last_sent.read(last, meta.sidx);
            agg_sent_valid.read(sent, meta.sidx);
            agg_sent_at.read(sent_at, meta.sidx);
            bool absorb = sent == 1 && last == folded && meta.now - sent_at < AGG_REFRESH_US;
            bit<32> head_before = hdr.mcc.version ++ hdr.mcc.stamp ++ hdr.mcc.msg_type ++ hdr.mcc.flags;
            bit<16> share_before = hdr.mcc.share ++ hdr.mcc.rsvd;
            echo.apply(hdr, meta, !absorb);
            if (absorb) {
                meta.drop = 1;
                meta.drop_reason = DROP_ABSORBED;
                session_feedback_absorbed.count(meta.sidx);
            } else {
                agg_last_sent.write(meta.sidx, folded);
                agg_sent_valid.write(meta.sidx, 1);
                agg_sent_at.write(meta.sidx, meta.now);
                bit<32> sum = 0;
                delta_cum_ack.apply(hdr.mtcp_ack.cum_ack, f.cum_ack, sum);
                delta_min_cwnd.apply(hdr.mtcp_ack.min_cwnd, f.min_cwnd, sum);
                delta_max_twnd.apply(hdr.mtcp_ack.max_twnd, f.max_twnd, sum);
                delta_adv_wnd.apply(hdr.mtcp_ack.adv_wnd, f.adv_wnd, sum);
                delta_sack.apply(hdr.mtcp_ack.sack_bitmap, 0, sum);
                hdr.mtcp_ack.sack_bitmap = 0;   /* one receiver's SACKs are not the fold's */
                hdr.mtcp_ack.cum_ack = f.cum_ack;
                hdr.mtcp_ack.min_cwnd = f.min_cwnd;
                hdr.mtcp_ack.max_twnd = f.max_twnd;
                hdr.mtcp_ack.adv_wnd = f.adv_wnd;
                hdr.mcc.flags = hdr.mcc.flags | MCC_FLAG_AGGREGATED;
                delta_head.apply(head_before,
                    hdr.mcc.version ++ hdr.mcc.stamp ++ hdr.mcc.msg_type ++ hdr.mcc.flags, sum);
                sum = sum + (bit<32>)(~share_before) + (bit<32>)(hdr.mcc.share ++ hdr.mcc.rsvd);
                udp_checksum.apply(sum, hdr.udp.checksum);
                meta.rewritten = 1;
            }
        }
    }
}

#endif
