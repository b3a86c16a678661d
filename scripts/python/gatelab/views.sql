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
-- run_headline: a run's headline on a split, one row per (run_id, split) that has one:
--   source 'final'         final.* (the whole split): a model with nothing to skip;
--          'hard'          hard.*: a model that routes depth (model.depth_routing tsa or early_exit),
--                          the skipping done, measured on the tokens and at the step of its final.*;
--          'hard_missing'  such a model with only its soft final.* recorded: loss, loss_se and bpc are
--                          NULL (its soft loss is no headline; `gatelab eval RUN --record`);
--          'periodic'      split val only, a run without final.*: its last periodic evaluation
--                          (val/loss, a few windows).
-- The row read is the one at the largest step, of those the one on the most windows; every other
-- column (bpc, accuracies, α, TLOps saved) is the row of prefix || name on the same windows at the
-- same step, itself the latest there (NULL otherwise).  soft_loss: a routed model's final.loss
-- (every block run), beside its headline; hard_loss, hard_active_frac: the hard.* rows on those
-- windows at that step, whatever the model.
CREATE VIEW run_headline AS
WITH lat AS (
    SELECT run_id, split, name, step, value, se, data_split, win_first, win_count, tokens FROM (
        SELECT m.*, row_number() OVER (PARTITION BY run_id, split, name, data_split, win_first, win_count
                                       ORDER BY step DESC) AS k
        FROM metrics m
        WHERE m.params = '{}' AND (m.name GLOB 'final.*' OR m.name GLOB 'hard.*'
              OR (m.split = 'val' AND m.name IN ('loss', 'bpc', 'token_acc', 'seq_acc', 'active_frac', 'tlops_saved'))))
    WHERE k = 1),
fin AS (
    SELECT * FROM (SELECT lat.*, row_number() OVER (PARTITION BY run_id, split
                                                    ORDER BY step DESC, win_count DESC, data_split, win_first) AS k
                   FROM lat WHERE name = 'final.loss') WHERE k = 1),
per AS (
    SELECT * FROM (SELECT lat.*, row_number() OVER (PARTITION BY run_id
                                                    ORDER BY step DESC, win_count DESC, data_split, win_first) AS k
                   FROM lat WHERE split = 'val' AND name = 'loss')
    WHERE k = 1 AND run_id NOT IN (SELECT run_id FROM fin WHERE split = 'val')),
head AS (
    SELECT f.run_id, f.split, f.step, f.value AS final_loss, f.se AS final_se, f.data_split, f.win_first,
           f.win_count, f.tokens,
           CASE WHEN coalesce((SELECT value FROM params p WHERE p.run_id = f.run_id AND p.key = 'model.depth_routing'),
                              'none') NOT IN ('tsa', 'early_exit') THEN 'final'
                WHEN EXISTS (SELECT 1 FROM lat h WHERE h.run_id = f.run_id AND h.split = f.split AND h.name = 'hard.loss'
                             AND h.data_split = f.data_split AND h.win_first = f.win_first
                             AND h.win_count = f.win_count AND h.step = f.step) THEN 'hard'
                ELSE 'hard_missing' END AS source
    FROM fin f
    UNION ALL
    SELECT run_id, split, step, value, se, data_split, win_first, win_count, tokens, 'periodic' FROM per),
hp AS (
    SELECT head.*, CASE source WHEN 'periodic' THEN '' WHEN 'hard' THEN 'hard.' ELSE 'final.' END AS prefix FROM head)
SELECT hp.run_id, hp.split, hp.source, rtrim(hp.prefix, '.') AS prefix, hp.step, hp.data_split, hp.win_first,
       hp.win_count, hp.tokens,
       CASE hp.source WHEN 'hard' THEN max(CASE WHEN l.name = 'hard.loss' THEN l.value END)
                      WHEN 'hard_missing' THEN NULL ELSE hp.final_loss END AS loss,
       CASE hp.source WHEN 'hard' THEN max(CASE WHEN l.name = 'hard.loss' THEN l.se END)
                      WHEN 'hard_missing' THEN NULL ELSE hp.final_se END AS loss_se,
       CASE WHEN hp.source IN ('hard', 'hard_missing') THEN hp.final_loss END AS soft_loss,
       CASE WHEN hp.source = 'hard_missing' THEN NULL
            ELSE max(CASE WHEN l.name = hp.prefix || 'bpc' THEN l.value END) END AS bpc,
       max(CASE WHEN l.name = hp.prefix || 'token_acc' THEN l.value END) AS token_acc,
       max(CASE WHEN l.name = hp.prefix || 'seq_acc' THEN l.value END) AS seq_acc,
       max(CASE WHEN l.name = hp.prefix || 'active_frac' THEN l.value END) AS active_frac,
       max(CASE WHEN l.name = hp.prefix || 'tlops_saved' THEN l.value END) AS tlops_saved,
       CASE WHEN hp.source <> 'periodic' THEN max(CASE WHEN l.name = 'hard.loss' THEN l.value END) END AS hard_loss,
       CASE WHEN hp.source <> 'periodic' THEN max(CASE WHEN l.name = 'hard.active_frac' THEN l.value END) END
           AS hard_active_frac
FROM hp LEFT JOIN lat l ON l.run_id = hp.run_id AND l.split = hp.split AND l.step = hp.step
     AND l.data_split = hp.data_split AND l.win_first = hp.win_first AND l.win_count = hp.win_count
GROUP BY hp.run_id, hp.split
