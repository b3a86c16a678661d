-- views.sql — the rules every view of runs shares, once, as SQL views over the registry's tables
-- (docs/registry.md, "Views").  gatelab (harness/store/registry_views.c, which embeds this file at
-- build time) and the Python package (gatelab/registry.py) both run this text: a registry opened
-- for writing keeps them in its schema (replaced when this text changes); one opened read-only
-- that lacks them, or holds another version, gets them as TEMP views of the connection.
--
-- Statements are separated by a line holding only ';'.  Each starts "CREATE VIEW name AS", as
-- SQLite stores it in sqlite_master.sql, so a stored view is compared with this text as it is.
--
-- run_variant: a run's variant label, as every view prints it: the value residual ("baseline"
-- for none), SATFormer's non-default knobs and the weight-decay policy in brackets
-- ("satformer[softmax,bias,wd=all]"), then "+<depth routing>" and "+<cross-layer>" unless none.
-- A key a run's params lack reads as its default (registered before the key existed).
CREATE VIEW run_variant AS
SELECT run_id, value_residual, depth_routing, cross_layer, sat_gate, sat_gate_bias, weight_decay_policy,
       (CASE WHEN value_residual = 'none' THEN 'baseline' ELSE value_residual END)
       || (CASE WHEN kg OR kb OR kw THEN '[' || (CASE WHEN kg THEN sat_gate ELSE '' END)
                || (CASE WHEN kg AND (kb OR kw) THEN ',' ELSE '' END) || (CASE WHEN kb THEN 'bias' ELSE '' END)
                || (CASE WHEN kb AND kw THEN ',' ELSE '' END) || (CASE WHEN kw THEN 'wd=all' ELSE '' END) || ']'
           ELSE '' END)
       || (CASE WHEN depth_routing <> 'none' THEN '+' || depth_routing ELSE '' END)
       || (CASE WHEN cross_layer <> 'none' THEN '+' || cross_layer ELSE '' END) AS label
FROM (SELECT *, value_residual = 'satformer' AND sat_gate <> 'relu' AS kg,
             value_residual = 'satformer' AND sat_gate_bias = '1' AS kb, weight_decay_policy = 'all' AS kw
      FROM (SELECT r.run_id,
                   coalesce((SELECT value FROM params p WHERE p.run_id = r.run_id AND p.key = 'model.value_residual'), 'none') AS value_residual,
                   coalesce((SELECT value FROM params p WHERE p.run_id = r.run_id AND p.key = 'model.depth_routing'), 'none') AS depth_routing,
                   coalesce((SELECT value FROM params p WHERE p.run_id = r.run_id AND p.key = 'model.cross_layer'), 'none') AS cross_layer,
                   coalesce((SELECT value FROM params p WHERE p.run_id = r.run_id AND p.key = 'model.sat_gate'), 'relu') AS sat_gate,
                   coalesce((SELECT value FROM params p WHERE p.run_id = r.run_id AND p.key = 'model.sat_gate_bias'), '0') AS sat_gate_bias,
                   coalesce((SELECT value FROM params p WHERE p.run_id = r.run_id AND p.key = 'train.weight_decay_policy'), 'matrices') AS weight_decay_policy
            FROM runs r))
;
-- run_headline: a run's headline on the splits val and test, one row per (run_id, split) that has one:
--   source 'final'         final.* (the whole split): a model with nothing to skip;
--          'hard'          hard.*: a model that routes depth (model.depth_routing tsa or early_exit),
--                          the skipping done, measured on the tokens and at the step of its final.*;
--          'hard_missing'  such a model with only its soft final.* recorded: loss, loss_se and bpc are
--                          NULL (its soft loss is no headline; `gatelab eval RUN --record`);
--          'periodic'      split val only, a run without final.*: its last periodic evaluation
--                          (val/loss, a few windows).
-- The row read is the one at the largest step, of those the one on the most windows; every other
-- column (bpc, accuracies, α, TLOps saved) is the row of prefix.name on the same windows at the
-- same step, itself the latest there (NULL otherwise).  Written as lookups per run (correlated
-- subqueries on the index metrics_by_name, named: without statistics SQLite would pick the primary
-- key, which has only run_id in front and reads every row of the run; 10x slower), so
-- `WHERE run_id = ?` reads one run's rows only, and the whole view takes a few milliseconds.  soft_loss: a routed model's final.loss
-- (every block run), beside its headline; hard_loss, hard_active_frac: the hard.* rows on those
-- windows at that step, whatever the model.
CREATE VIEW run_headline AS
SELECT run_id, split, source, rtrim(prefix, '.') AS prefix, step, data_split, win_first, win_count, tokens,
       CASE source WHEN 'hard' THEN (SELECT value FROM metrics x WHERE x.rowid = hard_row)
                   WHEN 'hard_missing' THEN NULL ELSE value END AS loss,
       CASE source WHEN 'hard' THEN (SELECT se FROM metrics x WHERE x.rowid = hard_row)
                   WHEN 'hard_missing' THEN NULL ELSE se END AS loss_se,
       CASE WHEN source IN ('hard', 'hard_missing') THEN value END AS soft_loss,
       CASE WHEN source <> 'hard_missing' THEN (SELECT CASE WHEN x.step = h.step THEN x.value END FROM metrics x INDEXED BY metrics_by_name
            WHERE x.run_id = h.run_id AND x.split = h.split AND x.name = prefix || 'bpc' AND x.params = '{}'
            AND x.data_split = h.data_split AND x.win_first = h.win_first AND x.win_count = h.win_count
            ORDER BY x.step DESC LIMIT 1) END AS bpc,
       (SELECT CASE WHEN x.step = h.step THEN x.value END FROM metrics x INDEXED BY metrics_by_name
        WHERE x.run_id = h.run_id AND x.split = h.split AND x.name = prefix || 'token_acc' AND x.params = '{}'
        AND x.data_split = h.data_split AND x.win_first = h.win_first AND x.win_count = h.win_count
        ORDER BY x.step DESC LIMIT 1) AS token_acc,
       (SELECT CASE WHEN x.step = h.step THEN x.value END FROM metrics x INDEXED BY metrics_by_name
        WHERE x.run_id = h.run_id AND x.split = h.split AND x.name = prefix || 'seq_acc' AND x.params = '{}'
        AND x.data_split = h.data_split AND x.win_first = h.win_first AND x.win_count = h.win_count
        ORDER BY x.step DESC LIMIT 1) AS seq_acc,
       (SELECT CASE WHEN x.step = h.step THEN x.value END FROM metrics x INDEXED BY metrics_by_name
        WHERE x.run_id = h.run_id AND x.split = h.split AND x.name = prefix || 'active_frac' AND x.params = '{}'
        AND x.data_split = h.data_split AND x.win_first = h.win_first AND x.win_count = h.win_count
        ORDER BY x.step DESC LIMIT 1) AS active_frac,
       (SELECT CASE WHEN x.step = h.step THEN x.value END FROM metrics x INDEXED BY metrics_by_name
        WHERE x.run_id = h.run_id AND x.split = h.split AND x.name = prefix || 'tlops_saved' AND x.params = '{}'
        AND x.data_split = h.data_split AND x.win_first = h.win_first AND x.win_count = h.win_count
        ORDER BY x.step DESC LIMIT 1) AS tlops_saved,
       CASE WHEN source <> 'periodic' THEN (SELECT CASE WHEN x.step = h.step THEN x.value END FROM metrics x INDEXED BY metrics_by_name
            WHERE x.run_id = h.run_id AND x.split = h.split AND x.name = 'hard.loss' AND x.params = '{}'
            AND x.data_split = h.data_split AND x.win_first = h.win_first AND x.win_count = h.win_count
            ORDER BY x.step DESC LIMIT 1) END AS hard_loss,
       CASE WHEN source <> 'periodic' THEN (SELECT CASE WHEN x.step = h.step THEN x.value END FROM metrics x INDEXED BY metrics_by_name
            WHERE x.run_id = h.run_id AND x.split = h.split AND x.name = 'hard.active_frac' AND x.params = '{}'
            AND x.data_split = h.data_split AND x.win_first = h.win_first AND x.win_count = h.win_count
            ORDER BY x.step DESC LIMIT 1) END AS hard_active_frac
FROM (SELECT k.*, CASE source WHEN 'periodic' THEN '' WHEN 'hard' THEN 'hard.' ELSE 'final.' END AS prefix,
             CASE WHEN source = 'hard' THEN (SELECT x.rowid FROM metrics x INDEXED BY metrics_by_name WHERE x.run_id = k.run_id
                  AND x.split = k.split AND x.name = 'hard.loss' AND x.params = '{}' AND x.data_split = k.data_split
                  AND x.win_first = k.win_first AND x.win_count = k.win_count ORDER BY x.step DESC LIMIT 1) END AS hard_row
      FROM (SELECT b.run_id, b.split, m.step, m.value, m.se, m.data_split, m.win_first, m.win_count, m.tokens,
                   CASE WHEN b.final_row IS NULL THEN 'periodic'
                        WHEN coalesce((SELECT value FROM params p WHERE p.run_id = b.run_id
                                       AND p.key = 'model.depth_routing'), 'none') NOT IN ('tsa', 'early_exit') THEN 'final'
                        WHEN (SELECT x.step FROM metrics x INDEXED BY metrics_by_name WHERE x.run_id = b.run_id AND x.split = b.split
                              AND x.name = 'hard.loss' AND x.params = '{}' AND x.data_split = m.data_split
                              AND x.win_first = m.win_first AND x.win_count = m.win_count
                              ORDER BY x.step DESC LIMIT 1) = m.step THEN 'hard'
                        ELSE 'hard_missing' END AS source
            FROM (SELECT r.run_id, s.split,
                         (SELECT x.rowid FROM metrics x INDEXED BY metrics_by_name WHERE x.run_id = r.run_id AND x.split = s.split
                          AND x.name = 'final.loss' AND x.params = '{}'
                          ORDER BY x.step DESC, x.win_count DESC, x.data_split, x.win_first LIMIT 1) AS final_row,
                         CASE WHEN s.split = 'val' THEN (SELECT x.rowid FROM metrics x INDEXED BY metrics_by_name WHERE x.run_id = r.run_id
                              AND x.split = 'val' AND x.name = 'loss' AND x.params = '{}'
                              ORDER BY x.step DESC, x.win_count DESC, x.data_split, x.win_first LIMIT 1) END AS periodic_row
                  FROM runs r CROSS JOIN (SELECT 'val' AS split UNION ALL SELECT 'test') s) b
            JOIN metrics m ON m.rowid = coalesce(b.final_row, b.periodic_row)) k) h
