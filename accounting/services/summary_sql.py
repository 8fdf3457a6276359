"""The payload-only-refines rule as one set-based PostgreSQL statement (INSERT ... SELECT ... GROUP BY).

It computes exactly what `accounting.services.refine.summarize` computes (the reference, also used on
SQLite for the demo); tests compare the two on random data. The rule compares time as exact core-
microseconds (`units`, int8) and hours are summed as whole nano-hours (int8), so no sum depends on row
order: any arrival order, plan or memory setting gives identical tables.
"""
from datetime import date, timedelta

from django.db import connection

from accounting.models import UsageRecord
from accounting.services.refine import day_start

# Step 1: the records of the range, the payloads' links to their pilots and the records' day parts, in
# analysed temp tables (real row counts for the planner). A record overlapping the range starts at most
# `max_span` before it, so the scan is a range on start.
PREPARE = [
    "DROP TABLE IF EXISTS gl_rec, gl_parts, gl_links, gl_pilots, gl_pilot_load, gl_pilot_day",
    """
    CREATE TEMP TABLE gl_rec ON COMMIT DROP AS
    SELECT r.id, r.kind, r.start, r."end", r.wall_seconds, r.cores, r.gpus,
           r.cpu_user_seconds + r.cpu_sys_seconds AS cpu,
           COALESCE(res.site_id, r.site_id) AS site_id, r.resource_id,
           CASE WHEN r.kind = 'pilot' THEN COALESCE(fe.vo_id, r.vo_id) ELSE r.vo_id END AS vo_id,
           r.person_id, r.project_id, r.pilot_ref, (r.start AT TIME ZONE 'UTC')::date AS start_day,
           (r."end" AT TIME ZONE 'UTC')::date AS end_day
    FROM accounting_usagerecord r
    LEFT JOIN accounting_resource res ON res.id = r.resource_id
    LEFT JOIN accounting_pilotdetails pd ON pd.record_id = r.id AND r.kind = 'pilot'
    LEFT JOIN accounting_frontend fe ON fe.client = pd.frontend_client
    WHERE NOT r.void AND r.start < %(hi)s AND r.start >= %(earliest)s AND r."end" >= %(lo)s
    """,
    "ANALYZE gl_rec",  # without counts the day parts' join to the links was a merge join over 240 MB of sorts
    """
    CREATE TEMP TABLE gl_links ON COMMIT DROP AS
    SELECT pay.id AS payload_id, k.id AS pilot_id
    FROM gl_rec pay
    JOIN accounting_usagerecord k ON k.natural_key = pay.pilot_ref
    WHERE pay.kind = 'payload' AND pay.pilot_ref <> '' AND k.kind = 'pilot' AND NOT k.void
    """,
    # Payloads naming their pilot by its glidein startd name (glidein_<pid>_<rand>@host) instead.
    """
    INSERT INTO gl_links (payload_id, pilot_id)
    SELECT DISTINCT ON (pay.id) pay.id, g.id
    FROM gl_rec pay
    JOIN accounting_pilotdetails gd ON gd.glidein_name = pay.pilot_ref
    JOIN accounting_usagerecord g ON g.id = gd.record_id AND g.kind = 'pilot' AND NOT g.void
    WHERE pay.kind = 'payload' AND pay.pilot_ref LIKE 'glidein%%'
      AND NOT EXISTS (SELECT 1 FROM gl_links l WHERE l.payload_id = pay.id)
    ORDER BY pay.id, g.natural_key DESC
    """,
    "ANALYZE gl_links",
    # The day parts of every record, with the pilot a linked payload runs in (pilot_id).
    """
    CREATE TEMP TABLE gl_parts ON COMMIT DROP AS
    SELECT s.id, s.kind, s.day, s.site_id, s.resource_id, s.vo_id, s.person_id, s.project_id, s.pilot_ref, s.pilot_id,
           COALESCE(s.site_id, 0) AS site_key, COALESCE(s.vo_id, 0) AS vo_key,
           (CASE WHEN s.day = s.end_day THEN 1 ELSE 0 END) AS jobs,
           GREATEST(s.secs, 0) * s.cores / 3600.0 AS wall_d, GREATEST(s.us, 0) * s.cores AS units,
           CASE WHEN s.wall_seconds > 0 AND s.secs > 0 THEN s.cpu * (s.secs / s.wall_seconds) / 3600.0 ELSE 0 END AS cpu_d,
           GREATEST(s.secs, 0) * s.gpus / 3600.0 AS gpu_d
    FROM (
        -- most records lie within one day: no series needed
        SELECT rec.*, lk.pilot_id, rec.start_day AS day, EXTRACT(EPOCH FROM rec."end" - rec.start)::float8 AS secs,
               (EXTRACT(EPOCH FROM rec."end" - rec.start) * 1000000)::int8 AS us
        FROM gl_rec rec LEFT JOIN gl_links lk ON lk.payload_id = rec.id
        WHERE rec.start_day = rec.end_day AND rec.start_day BETWEEN %(first)s AND %(last)s
      UNION ALL
        SELECT rec.*, lk.pilot_id, g.day, g.secs::float8 AS secs, (g.secs * 1000000)::int8 AS us
        FROM gl_rec rec LEFT JOIN gl_links lk ON lk.payload_id = rec.id
        CROSS JOIN LATERAL (
            SELECT d.day, EXTRACT(EPOCH FROM LEAST(rec."end", (d.day + 1)::timestamp AT TIME ZONE 'UTC')
                                             - GREATEST(rec.start, d.day::timestamp AT TIME ZONE 'UTC')) AS secs
            FROM (SELECT gs::date AS day
                  FROM generate_series(GREATEST(rec.start_day, %(first)s::date),
                                       LEAST(rec.end_day, %(last)s::date), interval '1 day') AS gs) d
        ) g
        WHERE rec.start_day < rec.end_day
    ) s
    WHERE s.secs > 0 OR s.day = s.end_day
    """,
    # The linked pilots' site (mapped) and resource: from gl_rec when the pilot overlaps the range (almost
    # always), else from the table.
    """
    CREATE TEMP TABLE gl_pilots ON COMMIT DROP AS
    WITH linked AS (SELECT DISTINCT pilot_id FROM gl_links)
    SELECT l.pilot_id, r.site_id AS pilot_site, r.resource_id AS pilot_resource
    FROM linked l JOIN gl_rec r ON r.id = l.pilot_id
    UNION ALL
    SELECT l.pilot_id, COALESCE(pres.site_id, p.site_id), p.resource_id
    FROM linked l JOIN accounting_usagerecord p ON p.id = l.pilot_id
    LEFT JOIN accounting_resource pres ON pres.id = p.resource_id
    WHERE NOT EXISTS (SELECT 1 FROM gl_rec r WHERE r.id = l.pilot_id)
    """,
    "ANALYZE gl_parts",
    "ANALYZE gl_pilots",
    # S per (pilot, day): the linked payloads' core-microseconds
    """
    CREATE TEMP TABLE gl_pilot_load ON COMMIT DROP AS
    SELECT pilot_id, day, SUM(units)::int8 AS load FROM gl_parts WHERE pilot_id IS NOT NULL GROUP BY pilot_id, day
    """,
    # per (pilot, day) with linked payloads: the pilot's site and resource and the payloads' factor min(1, W/S)
    """
    CREATE TEMP TABLE gl_pilot_day ON COMMIT DROP AS
    SELECT pl.pilot_id, pl.day, lp.pilot_site, lp.pilot_resource,
           CASE WHEN pl.load <= 0 THEN 1.0 ELSE LEAST(1.0, COALESCE(own.units, 0)::float8 / pl.load) END AS factor
    FROM gl_pilot_load pl
    LEFT JOIN gl_parts own ON own.id = pl.pilot_id AND own.day = pl.day AND own.kind = 'pilot'
    LEFT JOIN gl_pilots lp ON lp.pilot_id = pl.pilot_id
    """,
    "ANALYZE gl_pilot_load",
    "ANALYZE gl_pilot_day",  # real counts: the planner then hashes these, not the day parts
]

# Step 2: the rule over those tables, one INSERT ... SELECT ... GROUP BY (in day order).
SQL = """
WITH
nonpay AS MATERIALIZED (
    SELECT pa.*, (pl.pilot_id IS NOT NULL) AS linked_refined,
           CASE WHEN pl.load IS NULL OR pl.load <= 0 THEN 1.0
                WHEN pa.units > 0 THEN GREATEST(pa.units - pl.load, 0)::float8 / pa.units
                ELSE 0.0 END AS rshare,
           GREATEST(pa.units - COALESCE(pl.load, 0), 0) AS left_units
    FROM gl_parts pa LEFT JOIN gl_pilot_load pl ON pl.pilot_id = pa.id AND pl.day = pa.day
    WHERE pa.kind <> 'payload'
),
supply AS MATERIALIZED (
    SELECT site_key, vo_key, day, SUM(left_units)::int8 AS supply FROM nonpay GROUP BY site_key, vo_key, day
),
bucket_load AS MATERIALIZED (
    SELECT site_key, vo_key, day, SUM(units)::int8 AS load FROM gl_parts
    WHERE kind = 'payload' AND pilot_ref = '' GROUP BY site_key, vo_key, day
),
-- payloads without a pilot in the range: matched by (site, VO, day) bucket, or unmatched
unlinked AS MATERIALIZED (
    SELECT pa.*,
           CASE WHEN pa.pilot_ref <> '' OR COALESCE(s.supply, 0) <= 0 THEN 'payload_unmatched' ELSE 'payload' END AS designation,
           CASE WHEN pa.pilot_ref <> '' OR COALESCE(s.supply, 0) <= 0 OR COALESCE(b.load, 0) <= 0 THEN 1.0
                ELSE LEAST(1.0, s.supply::float8 / b.load) END AS factor
    FROM gl_parts pa
    LEFT JOIN supply s ON s.site_key = pa.site_key AND s.vo_key = pa.vo_key AND s.day = pa.day
    LEFT JOIN bucket_load b ON b.site_key = pa.site_key AND b.vo_key = pa.vo_key AND b.day = pa.day
    WHERE pa.kind = 'payload' AND pa.pilot_id IS NULL
),
contrib AS (
    -- linked payloads, at their pilot's site and resource, scaled by their pilot-day's factor
    SELECT pa.day, pd.pilot_site AS site_id, pd.pilot_resource AS resource_id, pa.vo_id, pa.person_id, pa.project_id,
           pa.kind, 'payload' AS designation, pa.jobs, pa.wall_d * pd.factor AS wall, pa.cpu_d * pd.factor AS cpu,
           pa.gpu_d * pd.factor AS gpu
    FROM gl_parts pa JOIN gl_pilot_day pd ON pd.pilot_id = pa.pilot_id AND pd.day = pa.day
  UNION ALL
    -- ... and what their pilot-day could not hold (only pilot-days with S > W)
    SELECT pa.day, pd.pilot_site, pd.pilot_resource, pa.vo_id, pa.person_id, pa.project_id, pa.kind,
           'payload_excess', 0, pa.wall_d * (1.0 - pd.factor), pa.cpu_d * (1.0 - pd.factor), pa.gpu_d * (1.0 - pd.factor)
    FROM gl_parts pa JOIN gl_pilot_day pd ON pd.pilot_id = pa.pilot_id AND pd.day = pa.day
    WHERE pd.factor < 1.0 AND pa.wall_d > 0
  UNION ALL
    SELECT u.day, u.site_id, u.resource_id, u.vo_id, u.person_id, u.project_id, u.kind, u.designation, u.jobs,
           u.wall_d * u.factor, u.cpu_d * u.factor, u.gpu_d * u.factor
    FROM unlinked u
  UNION ALL
    SELECT u.day, u.site_id, u.resource_id, u.vo_id, u.person_id, u.project_id, u.kind, 'payload_excess', 0,
           u.wall_d * (1.0 - u.factor), u.cpu_d * (1.0 - u.factor), u.gpu_d * (1.0 - u.factor)
    FROM unlinked u
    WHERE u.designation = 'payload' AND u.factor < 1.0 AND u.wall_d > 0
  UNION ALL
    SELECT n.day, n.site_id, n.resource_id, n.vo_id, n.person_id, n.project_id, n.kind,
           CASE WHEN n.kind = 'pilot' OR n.linked_refined OR (COALESCE(b.load, 0) > 0 AND COALESCE(s.supply, 0) > 0)
                THEN 'pilot_residual' ELSE 'batch' END,
           n.jobs, n.wall_d * sh.share, n.cpu_d * sh.share, n.gpu_d * sh.share
    FROM nonpay n
    LEFT JOIN supply s ON s.site_key = n.site_key AND s.vo_key = n.vo_key AND s.day = n.day
    LEFT JOIN bucket_load b ON b.site_key = n.site_key AND b.vo_key = n.vo_key AND b.day = n.day
    CROSS JOIN LATERAL (SELECT n.rshare * CASE WHEN COALESCE(b.load, 0) > 0 AND COALESCE(s.supply, 0) > 0
                                             THEN GREATEST(s.supply - b.load, 0)::float8 / s.supply ELSE 1.0 END AS share) sh
),
bench AS (
    SELECT resource_id, valid_from, hs06,
           LEAD(valid_from) OVER (PARTITION BY resource_id ORDER BY valid_from) AS valid_to
    FROM (
        SELECT DISTINCT ON (resource_id, valid_from) resource_id, valid_from,
               value * CASE benchmark WHEN 'SI2K' THEN 1.0 / 250.0 ELSE 1.0 END AS hs06
        FROM accounting_benchmarkfactor
        ORDER BY resource_id, valid_from, CASE benchmark WHEN 'HS23' THEN 2 WHEN 'HS06' THEN 1 ELSE 0 END DESC
    ) b
)
INSERT INTO accounting_dailyusage (day, site_id, resource_id, vo_id, person_id, project_id, science_domain_id,
                                   kind, designation, jobs, wall_hours, cpu_hours, normalized_hours, gpu_hours)
SELECT c.day, c.site_id, c.resource_id, c.vo_id, c.person_id, c.project_id,
       COALESCE(pj.field_of_science_id, v.field_of_science_id), c.kind, c.designation, SUM(c.jobs),
       SUM(round(c.wall * 1e9)::int8) / 1e9, SUM(round(c.cpu * 1e9)::int8) / 1e9,
       SUM(round(c.wall * COALESCE(bf.hs06, 0) * 1e9)::int8) / 1e9, SUM(round(c.gpu * 1e9)::int8) / 1e9
FROM contrib c
LEFT JOIN accounting_project pj ON pj.id = c.project_id
LEFT JOIN accounting_vo v ON v.id = c.vo_id
LEFT JOIN bench bf ON bf.resource_id = c.resource_id AND c.day >= bf.valid_from AND (bf.valid_to IS NULL OR c.day < bf.valid_to)
GROUP BY c.day, c.site_id, c.resource_id, c.vo_id, c.person_id, c.project_id,
         COALESCE(pj.field_of_science_id, v.field_of_science_id), c.kind, c.designation
ORDER BY c.day, c.site_id  -- a day's rows end up together on disk: day-range reads and one-day rebuilds touch few pages
"""


PILOT_DAY_EXCESS = """
SELECT p.natural_key, l.day, COALESCE(res.site_id, p.site_id), p.vo_id, COALESCE(own.wall_d, 0), l.load::float8 / 3600000000.0
FROM gl_pilot_load l
LEFT JOIN gl_parts own ON own.id = l.pilot_id AND own.day = l.day
JOIN accounting_usagerecord p ON p.id = l.pilot_id
LEFT JOIN accounting_resource res ON res.id = p.resource_id
WHERE l.load > COALESCE(own.units, 0) AND l.load > 0
ORDER BY l.day DESC, l.load - COALESCE(own.units, 0) DESC, p.natural_key
"""


def _prepare(cursor, first: date, last: date, span: timedelta | None = None) -> None:
    """The records of the days and their day parts and pilot links, in temp tables (see PREPARE)."""
    lo, hi = day_start(first), day_start(last + timedelta(days=1))
    span = UsageRecord.objects.longest_span() if span is None else span
    params = {"first": first, "last": last, "lo": lo, "hi": hi, "earliest": lo - span}
    for statement in PREPARE:
        cursor.execute(statement, params)


def pilot_day_excess_sql(first: date, last: date) -> list[tuple]:
    """(pilot key, day, site id, VO id, pilot core-hours W, linked payload core-hours S) where S > W.
    Run inside a transaction (the temp tables drop at commit)."""
    with connection.cursor() as cursor:
        _prepare(cursor, first, last)
        cursor.execute(PILOT_DAY_EXCESS)
        return cursor.fetchall()


# Writing only what changed: the rows of the range are computed into gl_new; an existing row equal in every
# column to a new one is kept (one per new row), the others are deleted and the new rows without an equal
# are inserted. After a small ingest most rows of a day are unchanged, so few rows (and index entries)
# are written; an empty range gets a plain INSERT ... SELECT.
COLUMNS = ("day", "site_id", "resource_id", "vo_id", "person_id", "project_id", "science_domain_id", "kind", "designation",
           "jobs", "wall_hours", "cpu_hours", "normalized_hours", "gpu_hours")  # fmt: skip
NULLABLE = {"site_id", "resource_id", "vo_id", "person_id", "project_id", "science_domain_id"}
SAME_ROW = " AND ".join(
    f"COALESCE(d.{c}, 0) = COALESCE(n.{c}, 0)" if c in NULLABLE else f"d.{c} = n.{c}" for c in COLUMNS
)  # ids are positive, so 0 stands for NULL and the join stays a hash join
DIFF = [
    "DROP TABLE IF EXISTS gl_new, gl_keep",
    "CREATE TEMP TABLE gl_new (nid bigint GENERATED ALWAYS AS IDENTITY, LIKE accounting_dailyusage INCLUDING IDENTITY) ON COMMIT DROP",
    SQL.replace("INSERT INTO accounting_dailyusage", "INSERT INTO gl_new"),
    # The planner expects ~1 match from 14 equalities and picks a merge join, sorting both sides on all 14
    # columns (0.2 s for one day's 18,000 rows); the hash join takes 0.025 s.
    "SET LOCAL enable_mergejoin = off",
    f"""
    CREATE TEMP TABLE gl_keep ON COMMIT DROP AS
    SELECT n.nid, min(d.id) AS id
    FROM gl_new n JOIN accounting_dailyusage d ON {SAME_ROW}
    WHERE d.day BETWEEN %(first)s AND %(last)s
    GROUP BY n.nid
    """,
    "RESET enable_mergejoin",
    """
    DELETE FROM accounting_dailyusage d
    WHERE d.day BETWEEN %(first)s AND %(last)s AND NOT EXISTS (SELECT 1 FROM gl_keep k WHERE k.id = d.id)
    """,
    f"""
    INSERT INTO accounting_dailyusage ({", ".join(COLUMNS)})
    SELECT {", ".join(COLUMNS)} FROM gl_new n WHERE NOT EXISTS (SELECT 1 FROM gl_keep k WHERE k.nid = n.nid)
    """,
]


def rebuild_chunk_sql(first: date, last: date, span: timedelta | None = None) -> int:
    """Replace the summary rows of `first`..`last` (inclusive), writing only rows that changed; returns the
    number of rows the range has. `span`: the longest record's span, when the caller already knows it."""
    with connection.cursor() as cursor:
        _prepare(cursor, first, last, span)
        cursor.execute("SELECT EXISTS (SELECT 1 FROM accounting_dailyusage WHERE day BETWEEN %s AND %s)", [first, last])
        if not cursor.fetchone()[0]:
            cursor.execute(SQL)
            return cursor.rowcount
        params = {"first": first, "last": last}
        for statement in DIFF[:3]:  # ... up to the new rows in gl_new
            cursor.execute(statement, params)
        rows = cursor.rowcount
        for statement in DIFF[3:]:
            cursor.execute(statement, params)
        return rows
