/* p4mcc switch program: feedback filtering for "worst receiver" protocols.
 *
 * For a session configured with assist_filter, a TFMCC report or a VLMCC
 * challenge goes upstream only if its rate is lower than the lowest rate
 * this switch already forwarded in the current round. The round is the
 * report's fb_round (TFMCC; a different value opens a new round) or a time
 * window of window_us microseconds (VLMCC; opened by the first challenge
 * after the previous window ended). The first message of a round always
 * passes; TFMCC reports without an RTT (no HAVE_RTT) have a round of their
 * own beside the reports with one. TFMCC reports from the current limiting
 * receiver (IS_CLR), leaving notices (LEAVING) and VLMCC RTT probes
 * (challenges with win_size 0, which carry no rate) always pass and leave
 * the round as it is: they neither open a round nor change its worst rate
 * (a probe's rate field is 0 and would otherwise block the rest of the
 * window). Forwarded messages get flag FILTERED, their UDP checksum
 * updated for the words rewritten (flags, stamp and share echoes;
 * aggregation.p4's ChecksumUpdate, RFC 1624, 0 staying 0); suppressed ones
 * are dropped and counted. A forwarded message's stamp echo is combined with
 * those of the messages suppressed since the last one passed (echo.p4). */
#ifndef P4MCC_FILTERING_P4
#define P4MCC_FILTERING_P4

control FeedbackFilter(inout headers_t hdr, inout metadata_t meta) {
    FeedbackEcho() echo;
    ChecksumDelta32() delta_head;
    ChecksumUpdate() udp_checksum;

    apply {
        if (meta.sidx < MAX_SESSIONS) {
            bit<32> rate = 0;
            bit<16> round = 0;
            bool unranked = false;   /* passes without touching the round */
            /* The filter's state: slot sidx, or sidx + MAX_SESSIONS for TFMCC
             * reports without HAVE_RTT.  Their rate was computed with the
             * initial RTT and the sender ranks them by a rate of its own (TFMCC
             * paper, sec. 2.4.4), so they are ranked only among themselves and
             * never suppress a report that carries an RTT, nor are suppressed
             * by one. */
            bit<32> slot = meta.sidx;
            bool ended;              /* the slot's round is over */
            if (hdr.tfmcc_report.isValid()) {
                rate = hdr.tfmcc_report.rate;
                round = hdr.tfmcc_report.fb_round;
                /* the CLR's feedback does not count for suppression (TFMCC
                 * paper, sec. 2.5): it passes and leaves the round alone, so
                 * other receivers' reports at the same rate still reach the
                 * sender (their RTT measurements depend on it) */
                unranked = (hdr.tfmcc_report.rflags
                            & (MCC_TFMCC_R_IS_CLR | MCC_TFMCC_R_LEAVING)) != 0;
                if ((hdr.tfmcc_report.rflags & MCC_TFMCC_R_HAVE_RTT) == 0) {
                    slot = meta.sidx + MAX_SESSIONS;
                }
                bit<16> current;
                filter_round.read(current, slot);
                ended = current != round;
            } else {
                rate = hdr.vlmcc_challenge.rate;
                unranked = hdr.vlmcc_challenge.win_size == 0;   /* an RTT probe */
                bit<48> start;
                filter_round_start.read(start, slot);
                ended = meta.now - start >= meta.filter_window;
            }
            bit<1> valid;
            bit<32> worst;
            filter_valid.read(valid, slot);
            filter_worst.read(worst, slot);
            bool new_round = valid == 0 || ended;
            bool pass = unranked || new_round || rate < worst;
            if (pass && !unranked) {
                if (new_round) {
                    filter_valid.write(slot, 1);
                    filter_round.write(slot, round);
                    filter_round_start.write(slot, meta.now);
                    filter_worst.write(slot, rate);
                } else if (rate < worst) {
                    filter_worst.write(slot, rate);
                }
            }
            bit<32> head_before = hdr.mcc.version ++ hdr.mcc.stamp ++ hdr.mcc.msg_type ++ hdr.mcc.flags;
            bit<16> share_before = hdr.mcc.share ++ hdr.mcc.rsvd;
            echo.apply(hdr, meta, pass);
            if (pass) {
                hdr.mcc.flags = hdr.mcc.flags | MCC_FLAG_FILTERED;
                bit<32> sum = 0;
                delta_head.apply(head_before,
                    hdr.mcc.version ++ hdr.mcc.stamp ++ hdr.mcc.msg_type ++ hdr.mcc.flags, sum);
                sum = sum + (bit<32>)(~share_before) + (bit<32>)(hdr.mcc.share ++ hdr.mcc.rsvd);
                udp_checksum.apply(sum, hdr.udp.checksum);
                meta.rewritten = 1;
            } else {
                meta.drop = 1;
                meta.drop_reason = DROP_FILTERED;
                session_feedback_absorbed.count(meta.sidx);
            }
        }
    }
}

#endif
