/* p4mcc switch program: MTCP-style feedback aggregation.
 *
 * For a session configured with assist_aggregate, every MTCP ACK or window
 * update from downstream port p (p < AGG_K) replaces port p's stored
 * summary. The switch then folds the summaries of the session group's
 * member ports (plus p itself):
 *     cum_ack = min, min_cwnd = min, max_twnd = max, adv_wnd = min
 * where a member port that has sent no summary yet counts as cum_ack 0
 * (its receiver may lack everything: a fold must not release for it)
 * and sends upstream one message carrying the fold (flag AGGREGATED) only
 * when the fold differs from the last one it sent; otherwise the message is
 * absorbed. The message keeps its type, node_id and echo_ts (those of the
 * receiver that triggered it). Its sack_bitmap is the fold's: bit i (packet
 * cum_ack + 1 + i) is set only when every counted port holds that packet --
 * each port's bitmap is moved to the fold's cum_ack (the packets between the
 * two cumulative ACKs are held by that port) and the bitmaps are ANDed; a
 * member that has not reported makes it 0. So the sender may release what
 * the fold SACKs, and a hole at one receiver no longer stops the ACK clock:
 * packets above it reach every port, the bitmap changes, the fold goes up.
 * NACKs are never folded: they pass upstream so no reported loss is lost. */
#ifndef P4MCC_AGGREGATION_P4
#define P4MCC_AGGREGATION_P4

/* One slot of the unrolled fold (no loops in v1model controls). A slot
 * counts if its summary is stored and its port is the ingress port or a
 * member whose membership has not timed out. A member port that has not
 * reported yet (bit set in pending) holds the fold's cum_ack at 0: its
 * receiver may lack every packet, so nothing may be released for it.
 * slot is bit<8> because BMv2 limits a shift amount to 8 bits. */
control FoldSlot(in bit<32> base, in bit<16> mask, in bit<16> pending, in bit<8> slot,
                 in metadata_t meta, inout fold_t f) {
    apply {
        bool counted = ((mask >> slot) & 16w1) == 16w1;
        bool unheard = ((pending >> slot) & 16w1) == 16w1;
        if (counted || unheard) {
            bool fresh = true;
            if (meta.membership_timeout != 0 && (bit<9>)slot != meta.in_port) {
                bit<48> ts;
                member_ts.read(ts, meta.session_gidx * MEMBER_PORTS + (bit<32>)slot);
                fresh = meta.now - ts <= meta.membership_timeout;
            }
            if (fresh && unheard) {
                f.cum_ack = 0;
                f.unheard = 1;
            } else if (fresh) {
                f.included = f.included | (16w1 << slot);
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

/* The second pass of the fold: port slot's SACK bitmap moved to the fold's
 * cum_ack and ANDed into sack. d = the port's cum_ack - the fold's; packets
 * cum+1 .. cum+d are held by the port (its cumulative ACK covers them), so
 * the moved bitmap is (bitmap << d) | ((1 << d) - 1), all ones from d = 32. */
control FoldSackSlot(in bit<32> base, in bit<16> included, in bit<8> slot, in bit<32> cum_ack,
                     inout bit<32> sack) {
    apply {
        if (((included >> slot) & 16w1) == 16w1) {
            bit<128> s;
            bit<32> bits;
            agg_summary.read(s, base + (bit<32>)slot);
            agg_sack.read(bits, base + (bit<32>)slot);
            bit<32> d = s[127:96] - cum_ack;
            bit<32> moved = 0xffffffff;
            if (d < 32) {
                moved = (bits << (bit<8>)d) | ((32w1 << (bit<8>)d) - 1);
            }
            sack = sack & moved;
        }
    }
}

control Aggregate(inout headers_t hdr, inout metadata_t meta) {
    /* AGG_K = 16 slots. */
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
    FoldSackSlot() sack0;
    FoldSackSlot() sack1;
    FoldSackSlot() sack2;
    FoldSackSlot() sack3;
    FoldSackSlot() sack4;
    FoldSackSlot() sack5;
    FoldSackSlot() sack6;
    FoldSackSlot() sack7;
    FoldSackSlot() sack8;
    FoldSackSlot() sack9;
    FoldSackSlot() sack10;
    FoldSackSlot() sack11;
    FoldSackSlot() sack12;
    FoldSackSlot() sack13;
    FoldSackSlot() sack14;
    FoldSackSlot() sack15;

    apply {
        if (meta.in_port < AGG_PORT_LIMIT && meta.sidx < MAX_SESSIONS) {
            bit<32> base = meta.sidx * AGG_K;
            agg_summary.write(base + (bit<32>)meta.in_port,
                hdr.mtcp_ack.cum_ack ++ hdr.mtcp_ack.min_cwnd
                ++ hdr.mtcp_ack.max_twnd ++ hdr.mtcp_ack.adv_wnd);
            agg_sack.write(base + (bit<32>)meta.in_port, hdr.mtcp_ack.sack_bitmap);
            bit<16> pbit = 16w1 << (bit<8>)meta.in_port;   /* in_port < 16: fits a BMv2 shift */
            bit<16> valid;
            agg_valid.read(valid, meta.sidx);
            valid = valid | pbit;
            agg_valid.write(meta.sidx, valid);
            bit<64> members = 0;
            if (meta.session_gidx < MAX_GROUPS) {
                member_bitmap.read(members, meta.session_gidx);
            } else {
                meta.session_gidx = 0;   /* misconfigured: no members, no ts reads out of range */
            }
            bit<16> mask = valid & (members[15:0] | pbit);
            bit<16> pending = members[15:0] & ~valid;   /* members not heard from yet */

            fold_t f;
            f.cum_ack = 0xffffffff;
            f.min_cwnd = 0xffffffff;
            f.max_twnd = 0;
            f.adv_wnd = 0xffffffff;
            f.included = 0;
            f.unheard = 0;
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

            bit<32> sack = 0;
            if (f.unheard == 0) {
                sack = 0xffffffff;
                sack0.apply(base, f.included, 0, f.cum_ack, sack);
                sack1.apply(base, f.included, 1, f.cum_ack, sack);
                sack2.apply(base, f.included, 2, f.cum_ack, sack);
                sack3.apply(base, f.included, 3, f.cum_ack, sack);
                sack4.apply(base, f.included, 4, f.cum_ack, sack);
                sack5.apply(base, f.included, 5, f.cum_ack, sack);
                sack6.apply(base, f.included, 6, f.cum_ack, sack);
                sack7.apply(base, f.included, 7, f.cum_ack, sack);
                sack8.apply(base, f.included, 8, f.cum_ack, sack);
                sack9.apply(base, f.included, 9, f.cum_ack, sack);
                sack10.apply(base, f.included, 10, f.cum_ack, sack);
                sack11.apply(base, f.included, 11, f.cum_ack, sack);
                sack12.apply(base, f.included, 12, f.cum_ack, sack);
                sack13.apply(base, f.included, 13, f.cum_ack, sack);
                sack14.apply(base, f.included, 14, f.cum_ack, sack);
                sack15.apply(base, f.included, 15, f.cum_ack, sack);
            }

            bit<160> folded = f.cum_ack ++ f.min_cwnd ++ f.max_twnd ++ f.adv_wnd ++ sack;
            bit<160> last;
            bit<1> sent;
            agg_last_sent.read(last, meta.sidx);
            agg_sent_valid.read(sent, meta.sidx);
            if (sent == 1 && last == folded) {
                meta.drop = 1;
                meta.drop_reason = DROP_ABSORBED;
                session_feedback_absorbed.count(meta.sidx);
            } else {
                agg_last_sent.write(meta.sidx, folded);
                agg_sent_valid.write(meta.sidx, 1);
                hdr.mtcp_ack.sack_bitmap = sack;   /* what every counted port holds */
                hdr.mtcp_ack.cum_ack = f.cum_ack;
                hdr.mtcp_ack.min_cwnd = f.min_cwnd;
                hdr.mtcp_ack.max_twnd = f.max_twnd;
                hdr.mtcp_ack.adv_wnd = f.adv_wnd;
                hdr.mcc.flags = hdr.mcc.flags | MCC_FLAG_AGGREGATED;
                hdr.udp.checksum = 0;
                meta.rewritten = 1;
            }
        }
    }
}

#endif
