"""A synthetic month of grid accounting data, written in the real file formats (the demo and benchmarks).

`generate(directory, seed=42, scale=1.0)` writes, deterministically (one `random.Random(seed)`; every
time is an offset from `end`, so the same seed gives the same jobs whatever the end date):

- `mappings/{sites,vos,projects,benchmarks,frontends}.csv`: the mapping tables (CONTRACT.md columns);
- `factory/history`: the glideins one GlideinWMS factory submitted, as its schedd's history file: grid
  universe ads (`JobUniverse = 9`) with `GlideinEntryName`, `GlideinClient`, `GLIDEIN_CPUS`, ... each
  followed by a `***` banner line;
- `ap/<vo>/history`: the user jobs of each VO's access point (payloads), each run inside a pilot's
  lifetime and naming it through `MATCH_EXP_JOB_GLIDEIN_Schedd` / `_ClusterId` / `_ProcId`;
- `ce/<site>/history`: ordinary batch jobs of a few sites, with no glidein attribute: they carry no site,
  so ingest them with the site as hint (`Manifest.files[i].site`).

What the month holds on purpose (DOMAIN.md "Summaries"):
- payloads fill most, never all, of their pilot's cores x time, sequentially and side by side, so
  pilots keep a `pilot_residual`; a few pilots never ran a job;
- ~2 % of pilots are over-committed (more concurrent payload cores than pilot cores): `payload_excess`;
- ~3 % of payloads name a pilot that is not in the factory file (`payload_unmatched`): pilots still
  running when the month ends, and pilots of a second factory whose history was not collected;
- ~20 % of users authenticate with tokens (`AuthTokenSubject`, no X.509 attributes); a few GPU pilots;
- resources with HS06, HS23 (one changing mid-month) and SI2K factors, and two with none.

`scale` multiplies the numbers of pilots, payloads and batch jobs (1.0: ~5,000 pilots, ~50,000 payloads,
~3,000 batch jobs); `padding` adds the attributes a real schedd writes (~80 per ad, 2-3 KB).
`write_payload_ads` writes N payload ads (and optionally their pilots) for ingest benchmarks.
Ads are plain formatted text written through buffered files: 50,000 ads take a few seconds.
"""
from __future__ import annotations

import csv
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

FORMAT = "htcondor-history"
DAYS = 30
FACTORY_SCHEDD = "schedd_glideins3@gfactory-2.opensciencegrid.org"
# A second factory serving the same frontends; its history was not collected (payload_unmatched).
LOST_FACTORY_SCHEDD = "schedd_glideins5@cmsgwms-factory.fnal.gov"
FACTORY_HOST = "gfactory-2.opensciencegrid.org"
PILOTS_AT_SCALE_1 = 5000
BATCH_AT_SCALE_1 = 3000
LOST_PILOT_SHARE = 0.02
OVERCOMMIT_SHARE = 0.02
IDLE_PILOT_SHARE = 0.04
GPU_CLIENT_SHARE = 0.25  # of the pilots of a VO that has a GPU frontend group
HOUR = 3600

# site, facility, worker host pattern ({n}: a number), resources (GLIDEIN_ResourceName = CE name)
SITES: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("MWT2", "University of Chicago", "uct2-c{n:03d}.mwt2.org", ("MWT2_UC_CE", "MWT2_IU_CE", "MWT2_UIUC_CE")),
    ("AGLT2", "University of Michigan", "c-{n:03d}-{m}.aglt2.org", ("AGLT2_CE_1", "AGLT2_CE_2")),
    ("BNL-ATLAS", "Brookhaven National Laboratory", "acas{n:04d}.usatlas.bnl.gov", ("BNL_ATLAS_1", "BNL_ATLAS_2")),
    ("SWT2_CPB", "University of Texas at Arlington", "c{n:03d}-{m}.cpb.uta.edu", ("SWT2_CPB_CE",)),
    ("NET2", "University of Massachusetts Amherst", "wn{n:04d}.net2.mghpcc.org", ("NET2_CE_1",)),
    ("UCSD-T2", "University of California San Diego", "cabinet-{m}-{n}-{m}.t2.ucsd.edu", ("UCSDT2-B", "UCSDT2-C")),
    ("Nebraska", "University of Nebraska-Lincoln", "red-c{n:04d}.unl.edu", ("Nebraska-Red-CE1", "Nebraska-Red-CE2")),
    ("Purdue-Anvil", "Purdue University", "a{n:03d}.anvil.rcac.purdue.edu", ("Purdue-Anvil-CE1",)),
    ("Caltech-T2", "California Institute of Technology", "compute-{m}-{n}.ultralight.org", ("CIT_CMS_T2_CE1", "CIT_CMS_T2_CE2")),
    ("UFlorida-HPG", "University of Florida", "c{n:04d}a-s{m}.ufhpc", ("UFlorida-HPG2",)),
    ("FNAL_GPGrid", "Fermi National Accelerator Laboratory", "fnpc{n:04d}.fnal.gov", ("GPGrid_CE01", "GPGrid_CE02", "GPGrid_CE03")),
    ("CERN-PROD", "CERN", "b{n:04d}{m}.cern.ch", ("CERN-PROD-ce503", "CERN-PROD-ce504")),
    ("Wisconsin-CHTC", "University of Wisconsin-Madison", "e{n:04d}.chtc.wisc.edu", ("CHTC-CE1", "CHTC-CE2")),
    ("SPRACE", "Universidade Estadual Paulista", "node{n:03d}.sprace.org.br", ("SPRACE-CE",)),
    ("UConn-HPC", "University of Connecticut", "cn{n:03d}.storrs.hpc.uconn.edu", ("UConn-HPC-CE1",)),
    ("Clemson-Palmetto", "Clemson University", "node{n:04d}.palmetto.clemson.edu", ("Clemson-Palmetto-CE",)),
    ("SU-ITS", "Syracuse University", "its-condor-{n:03d}.syr.edu", ("SU-ITS-CE2", "SU-ITS-CE3")),
    ("JLab-FARM", "Thomas Jefferson National Accelerator Facility", "farm{n:05d}.jlab.org", ("JLab-FARM-CE",)),
    ("LIGO-CIT", "LIGO Laboratory, Caltech", "node{n:03d}.cluster.ldas.cit", ("LIGO-CIT-CE1",)),
    ("WIPAC", "University of Wisconsin-Madison", "gzk-{n:03d}.icecube.wisc.edu", ("WIPAC-NPX-CE",)),
]
SITE_BY_NAME = {site[0]: site for site in SITES}
RESOURCE_BENCHMARK_OVERRIDES = {
    # resource: (benchmark, value) instead of an HS06 factor drawn at random; None: no factor at all
    "CERN-PROD-ce503": ("HS23", 17.8),
    "CERN-PROD-ce504": ("HS23", 21.3),
    "BNL_ATLAS_2": ("HS23", 15.4),
    "SPRACE-CE": ("SI2K", 2950.0),
    "UConn-HPC-CE1": None,
    "Clemson-Palmetto-CE": None,
}
CHANGING_RESOURCE = "MWT2_UC_CE"  # gets a new HS23 factor half-way through the month (validity periods)


@dataclass(frozen=True)
class VOSpec:
    name: str
    field_of_science: str
    pilot_share: float
    users: int
    robot_dn: str
    factory_user: str
    access_point: str
    fqan: str
    token_issuer: str
    clients: tuple[tuple[str, str], ...]  # (GlideinClient, GlideinFrontendName)
    gpu_client: str
    sites: tuple[tuple[str, int], ...]
    pilot_cores: tuple[tuple[int, float], ...]
    job_cores: tuple[tuple[int, float], ...]
    lifetime_hours: tuple[float, float, float]  # low, high, mode
    memory_per_core: int
    production: str = ""  # a production identity that runs a large share of the VO's jobs


VOS: tuple[VOSpec, ...] = (
    VOSpec(
        "cms", "High Energy Physics", 0.30, 50,
        "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=cmspilot/CN=766351/CN=Robot: CMS Pilot",
        "fecms", "vocms0253.cern.ch", "/cms/Role=NULL/Capability=NULL", "https://cms-auth.web.cern.ch/",
        (("CMSG-v1_0.main", "CMSG-v1_0:cmspilot"), ("CMSG-v1_0.highio", "CMSG-v1_0:cmspilot")), "",
        (("UCSD-T2", 3), ("Nebraska", 3), ("Caltech-T2", 2), ("Purdue-Anvil", 2), ("UFlorida-HPG", 2),
         ("FNAL_GPGrid", 3), ("CERN-PROD", 3), ("SPRACE", 1), ("Wisconsin-CHTC", 1)),
        ((8, 0.85), (4, 0.15)), ((1, 0.45), (2, 0.05), (4, 0.2), (8, 0.3)), (6, 48, 30), 2500,
        "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=cmsprd/CN=689473/CN=Robot: CMS Production",
    ),
    VOSpec(
        "atlas", "High Energy Physics", 0.22, 40,
        "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlpilo1/CN=614260/CN=Robot: ATLAS Pilot1",
        "featlas", "aipanda157.cern.ch", "/atlas/Role=NULL/Capability=NULL", "https://atlas-auth.web.cern.ch/",
        (("ATLAS-FE-v1_0.main", "ATLAS-FE-v1_0:atlaspilot"),), "",
        (("MWT2", 3), ("AGLT2", 3), ("BNL-ATLAS", 4), ("SWT2_CPB", 2), ("NET2", 2), ("CERN-PROD", 3)),
        ((8, 0.8), (1, 0.2)), ((1, 0.35), (8, 0.65)), (4, 48, 36), 2000,
        "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=atlprd/CN=663551/CN=Robot: ATLAS Production",
    ),
    VOSpec(
        "osg", "Multidisciplinary", 0.18, 45,
        "/DC=org/DC=incommon/C=US/ST=California/O=University of California, San Diego/CN=flock.opensciencegrid.org",
        "feosg", "ap40.uw.osg-htc.org", "/osg/Role=NULL/Capability=NULL", "https://osg-htc.org/ospool",
        (("OSG_Flock-v1.main", "OSG_Flock-v1:ospool"),), "OSG_Flock-v1.gpu",
        (("MWT2", 2), ("AGLT2", 1), ("Purdue-Anvil", 2), ("Nebraska", 2), ("UCSD-T2", 1), ("Wisconsin-CHTC", 3),
         ("UConn-HPC", 1), ("Clemson-Palmetto", 2), ("SU-ITS", 2), ("SPRACE", 1), ("UFlorida-HPG", 1)),
        ((1, 0.3), (4, 0.3), (8, 0.4)), ((1, 0.8), (2, 0.1), (4, 0.1)), (2, 24, 8), 2000,
    ),
    VOSpec(
        "icecube", "Astrophysics", 0.07, 15,
        "/DC=org/DC=incommon/C=US/ST=Wisconsin/O=University of Wisconsin-Madison/CN=glidein-simprod.icecube.wisc.edu",
        "feicecube", "submit-1.icecube.wisc.edu", "/icecube/Role=NULL/Capability=NULL", "https://chtc.cs.wisc.edu/icecube",
        (("IceCube-FE-v1.main", "IceCube-FE-v1:icecube"),), "IceCube-FE-v1.gpu",
        (("WIPAC", 3), ("Wisconsin-CHTC", 1), ("Purdue-Anvil", 1), ("SU-ITS", 1), ("UCSD-T2", 1), ("Clemson-Palmetto", 1)),
        ((1, 0.5), (4, 0.3), (8, 0.2)), ((1, 0.8), (2, 0.1), (4, 0.1)), (2, 24, 10), 2000,
        "/DC=org/DC=incommon/C=US/ST=Wisconsin/O=University of Wisconsin-Madison/CN=icecube-simprod.icecube.wisc.edu",
    ),
    VOSpec(
        "ligo", "Gravitational Physics", 0.06, 15,
        "/DC=org/DC=cilogon/C=US/O=LIGO/OU=Robots/CN=ldas-osg.ligo.caltech.edu/CN=ligo-pilot/CN=Robot",
        "feligo", "ldas-osg.ligo.caltech.edu", "/ligo/Role=NULL/Capability=NULL", "https://cilogon.org/igwn",
        (("LIGO-FE-v1.main", "LIGO-FE-v1:ligo"),), "",
        (("LIGO-CIT", 3), ("Caltech-T2", 1), ("Nebraska", 1), ("SU-ITS", 1), ("Purdue-Anvil", 1), ("UConn-HPC", 1)),
        ((1, 0.4), (4, 0.4), (8, 0.2)), ((1, 0.8), (2, 0.1), (4, 0.1)), (2, 24, 12), 2000,
    ),
    VOSpec(
        "dune", "Neutrino Physics", 0.07, 15,
        "/DC=org/DC=cilogon/C=US/O=Fermi National Accelerator Laboratory/OU=Robots/CN=dunegpschedd.fnal.gov/CN=dunepilot/CN=UID:dunepilot",
        "fedune", "jobsub05.fnal.gov", "/dune/Role=Analysis/Capability=NULL", "https://cilogon.org/dune",
        (("fermilab-FIFE-v1.dune", "fermilab-FIFE-v1:dune"),), "",
        (("FNAL_GPGrid", 4), ("CERN-PROD", 1), ("SU-ITS", 1), ("Nebraska", 1), ("UCSD-T2", 1), ("MWT2", 1)),
        ((1, 0.5), (4, 0.2), (8, 0.3)), ((1, 0.9), (2, 0.1)), (2, 48, 20), 2000,
        "/DC=org/DC=cilogon/C=US/O=Fermi National Accelerator Laboratory/OU=Robots/CN=dunepro/CN=UID:dunepro",
    ),
    VOSpec(
        "fermilab", "High Energy Physics", 0.06, 12,
        "/DC=org/DC=cilogon/C=US/O=Fermi National Accelerator Laboratory/OU=Robots/CN=fifegsi.fnal.gov/CN=fifepilot/CN=UID:fifepilot",
        "fefermilab", "jobsub02.fnal.gov", "/fermilab/Role=Analysis/Capability=NULL", "https://cilogon.org/fermilab",
        (("fermilab-FIFE-v1.main", "fermilab-FIFE-v1:fermilab"),), "",
        (("FNAL_GPGrid", 5), ("Nebraska", 1), ("Clemson-Palmetto", 1), ("MWT2", 1)),
        ((1, 0.5), (8, 0.5)), ((1, 0.9), (2, 0.1)), (2, 48, 16), 2000,
        "/DC=org/DC=cilogon/C=US/O=Fermi National Accelerator Laboratory/OU=Robots/CN=novapro/CN=UID:novapro",
    ),
    VOSpec(
        "gluex", "Nuclear Physics", 0.04, 8,
        "/DC=org/DC=incommon/C=US/ST=Virginia/O=Thomas Jefferson National Accelerator Facility/CN=scosg16.jlab.org",
        "fegluex", "scosg16.jlab.org", "/gluex/Role=NULL/Capability=NULL", "https://cilogon.org/jlab",
        (("JLab-GlueX-v1.main", "JLab-GlueX-v1:gluex"),), "",
        (("JLab-FARM", 3), ("UConn-HPC", 1), ("MWT2", 1), ("Clemson-Palmetto", 1), ("SU-ITS", 1)),
        ((1, 0.3), (4, 0.3), (8, 0.4)), ((1, 0.8), (2, 0.1), (4, 0.1)), (2, 36, 14), 2000,
    ),
)  # fmt: skip
VO_BY_NAME = {vo.name: vo for vo in VOS}

# Sites whose own batch system runs ordinary grid jobs too: (site, batch schedd, ((vo, weight), ...), share)
BATCH_SITES = (
    ("Nebraska", "red-condor.unl.edu", (("cms", 1.0),), 0.35),
    ("FNAL_GPGrid", "fnpccm2.fnal.gov", (("fermilab", 0.6), ("dune", 0.4)), 0.4),
    ("CERN-PROD", "bigbird27.cern.ch", (("atlas", 0.5), ("cms", 0.5)), 0.25),
)

# VO projects: (name, field of science, vo)
VO_PROJECTS = (
    ("CMS-Production", "High Energy Physics", "cms"),
    ("CMS-Analysis", "High Energy Physics", "cms"),
    ("CMS-HLT-Studies", "High Energy Physics", "cms"),
    ("ATLAS-Production", "High Energy Physics", "atlas"),
    ("ATLAS-Analysis", "High Energy Physics", "atlas"),
    ("ATLAS-Upgrade", "High Energy Physics", "atlas"),
    ("IceCube-Simulation", "Astrophysics", "icecube"),
    ("IceCube-Reconstruction", "Astrophysics", "icecube"),
    ("LIGO-O4-Searches", "Gravitational Physics", "ligo"),
    ("LIGO-Parameter-Estimation", "Gravitational Physics", "ligo"),
    ("DUNE-FD-Simulation", "Neutrino Physics", "dune"),
    ("DUNE-ND-Reconstruction", "Neutrino Physics", "dune"),
    ("DUNE-ProtoDUNE", "Neutrino Physics", "dune"),
    ("Fermilab-NOvA", "Neutrino Physics", "fermilab"),
    ("Fermilab-MicroBooNE", "Neutrino Physics", "fermilab"),
    ("Fermilab-Mu2e", "High Energy Physics", "fermilab"),
    ("Fermilab-SBND", "Neutrino Physics", "fermilab"),
    ("Fermilab-gm2", "High Energy Physics", "fermilab"),
    ("GlueX-Reconstruction", "Nuclear Physics", "gluex"),
    ("GlueX-Simulation", "Nuclear Physics", "gluex"),
)
# OSPool projects are named <institution short name>_<PI surname>: (short, institution, field)
OSG_PROJECT_INSTITUTIONS = (
    ("UWMadison", "University of Wisconsin-Madison", "Biological Sciences"),
    ("UChicago", "University of Chicago", "Earth Sciences"),
    ("GATech", "Georgia Institute of Technology", "Chemistry"),
    ("UNL", "University of Nebraska-Lincoln", "Genomics"),
    ("Syracuse", "Syracuse University", "Physics"),
    ("Utah", "University of Utah", "Materials Science"),
    ("MSU", "Michigan State University", "Molecular and Structural Biosciences"),
    ("Clemson", "Clemson University", "Computer Science"),
    ("USC", "University of Southern California", "Neuroscience"),
    ("Duke", "Duke University", "Medical Sciences"),
    ("NotreDame", "University of Notre Dame", "Economics"),
    ("Rutgers", "Rutgers University", "Mathematical Sciences"),
    ("CUBoulder", "University of Colorado Boulder", "Astronomy"),
    ("ASU", "Arizona State University", "Engineering"),
    ("Cornell", "Cornell University", "Ecology"),
    ("Tufts", "Tufts University", "Biological Sciences"),
    ("FSU", "Florida State University", "Chemistry"),
    ("UCSD", "University of California San Diego", "Bioinformatics"),
    ("IU", "Indiana University", "Computer Science"),
    ("UMN", "University of Minnesota", "Agricultural Sciences"),
)
UNREGISTERED_PROJECTS = ("TG-PHY230012", "Lab_Unregistered")  # used by jobs, missing from projects.csv

FIRST_NAMES = (
    "James", "Maria", "Wei", "Priya", "Ahmed", "Olga", "Carlos", "Yuki", "Fatima", "John", "Anna", "Luca",
    "Sofia", "Mateo", "Chen", "Aisha", "David", "Elena", "Hiroshi", "Ingrid", "Kwame", "Laura", "Mohammed",
    "Nadia", "Oscar", "Paula", "Rahul", "Sara", "Tomas", "Ursula", "Victor", "Xin", "Yara", "Zoltan",
    "Alice", "Bruno", "Clara", "Dmitri", "Emma", "Felix", "Greta", "Hannah", "Ivan", "Julia", "Kai",
    "Lena", "Marco", "Nina", "Omar", "Pedro", "Qiang", "Rosa", "Stefan", "Tara", "Umar", "Vera", "Wen",
)  # fmt: skip
LAST_NAMES = (
    "Smith", "Garcia", "Zhang", "Patel", "Hassan", "Ivanova", "Rossi", "Tanaka", "Khan", "Johnson", "Muller",
    "Bianchi", "Lopez", "Wang", "Okafor", "Cohen", "Petrov", "Suzuki", "Larsen", "Mensah", "Dubois", "Ali",
    "Novak", "Fernandez", "Silva", "Kumar", "Nilsson", "Horvath", "Kowalski", "Weber", "Li", "Nguyen",
    "Schmidt", "Martin", "Brown", "Davis", "Moreau", "Yamamoto", "Costa", "Jensen", "Fischer", "Romano",
    "Singh", "Chen", "Kim", "Park", "Ortiz", "Reyes", "Morales", "Baker", "Wright", "Young", "Hughes",
    "Foster", "Bennett", "Ward", "Price", "Rivera", "Sanders", "Perry", "Powell", "Long", "Ross", "Gray",
)  # fmt: skip
USER_INSTITUTIONS = (
    "University of Wisconsin-Madison", "University of Chicago", "Fermi National Accelerator Laboratory",
    "University of California San Diego", "University of Nebraska-Lincoln", "Purdue University",
    "University of Michigan", "Indiana University", "Syracuse University", "California Institute of Technology",
    "University of Florida", "Brookhaven National Laboratory", "Thomas Jefferson National Accelerator Facility",
    "Michigan State University", "Duke University", "University of Notre Dame", "Rutgers University",
)  # fmt: skip


# --- the manifest ---------------------------------------------------------------------------------------


@dataclass
class DataFile:
    """One written history file: its path, format, the `--site` hint it needs ("" if none) and contents."""

    path: Path
    fmt: str
    site: str
    kind: str  # "pilot", "payload" or "batch": the kind of record every ad of the file is
    records: int


@dataclass
class Manifest:
    """What `generate` wrote: files (with format and site hint), mapping CSVs, counts and the time range."""

    directory: Path
    seed: int
    scale: float
    start: datetime  # every timestamp written is in [start, end]
    end: datetime
    files: list[DataFile] = field(default_factory=list)
    mappings: dict[str, Path] = field(default_factory=dict)  # mapping kind -> CSV, in loading order
    pilots: int = 0  # pilot ads in the factory history
    payloads: int = 0  # payload ads, orphans included
    batch: int = 0
    orphan_payloads: int = 0  # payloads naming a pilot that is not in the factory history
    overcommitted_pilots: int = 0
    idle_pilots: int = 0
    gpu_pilots: int = 0
    snapshots: Path | None = None  # site capacity and demand (`snapshot` format), for categories 7 and 8
    snapshot_rows: int = 0

    @property
    def first_day(self) -> date:
        return self.start.date()

    @property
    def last_day(self) -> date:
        return self.end.date()


# --- the world: people, projects, pilots, jobs -------------------------------------------------------------


@dataclass(slots=True)
class _User:
    vo: str
    login: str
    subject: str  # DN or token subject
    token: bool
    fqan: str
    projects: tuple[str, ...]
    memory_per_core: int
    efficiency: float  # typical CPU efficiency of the user's jobs


@dataclass(slots=True)
class _Pilot:
    vo: VOSpec
    client: str
    frontend: str
    site: str
    resource: str
    entry: str
    cores: int
    memory_mb: int
    gpus: int
    qdate: int
    start: int
    end: int
    host: str
    glidein: str  # glidein_<pid>_<rand>: the startd name's first part
    schedd: str = FACTORY_SCHEDD
    cluster: int = 0
    proc: int = 0
    idle: bool = False
    overcommitted: bool = False
    cpu_user: float = 0.0
    cpu_sys: float = 0.0
    jobs: int = 0

    @property
    def key(self) -> str:
        return f"{self.schedd}#{self.cluster}.{self.proc}"


@dataclass(slots=True)
class _Job:
    user: _User
    project: str
    start: int
    end: int
    cores: int
    memory_mb: int
    gpus: int
    cpu_user: int
    cpu_sys: int
    exit_code: int | None
    exit_signal: int | None
    pilot: _Pilot | None  # None: an ordinary batch job
    slot: int
    host: str = ""
    cluster: int = 0
    proc: int = 0
    qdate: int = 0


def _q(value: str) -> str:
    """A ClassAd string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _pick(rng: random.Random, weighted) -> object:
    items, weights = zip(*weighted, strict=True)
    return rng.choices(items, weights)[0]


class _World:
    """The grid of one seed: users, projects, pilots and jobs in the month ending at `end`."""

    def __init__(self, seed: int, end: datetime) -> None:
        self.rng = random.Random(seed)
        # Filler values (padding, ids nobody reads) come from their own stream, so that `padding` does not
        # change the jobs themselves.
        self.fill = random.Random(seed * 7919 + 17)
        self.end = int(end.timestamp())
        self.start = self.end - DAYS * 86400
        self.projects: list[tuple[str, str, str, str]] = []  # name, field, pi, institution
        self.users: dict[str, list[_User]] = {}
        self.user_weights: dict[str, list[float]] = {}
        self._names: set[str] = set()
        self._logins: set[str] = set()
        self.next_cluster: dict[str, int] = {}  # factory schedd -> last cluster id given out
        self._make_projects()
        self._make_users()

    # people and projects

    def _person(self) -> tuple[str, str]:
        rng = self.rng
        while True:
            name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
            if name not in self._names:
                self._names.add(name)
                return name, name.split()[1]

    def _login(self, name: str) -> str:
        first, last = name.lower().split()
        login = (first[0] + last)[:8]
        candidate, n = login, 1
        while candidate in self._logins:
            n += 1
            candidate = f"{login}{n}"
        self._logins.add(candidate)
        return candidate

    def _make_projects(self) -> None:
        rng = self.rng
        self.vo_projects: dict[str, list[str]] = {vo.name: [] for vo in VOS}
        for name, fos, vo in VO_PROJECTS:
            pi, _ = self._person()
            self.projects.append((name, fos, pi, rng.choice(USER_INSTITUTIONS)))
            self.vo_projects[vo].append(name)
        for short, institution, fos in OSG_PROJECT_INSTITUTIONS:
            pi, surname = self._person()
            name = f"{short}_{surname}"
            self.projects.append((name, fos, pi, institution))
            self.vo_projects["osg"].append(name)

    def _make_users(self) -> None:
        rng = self.rng
        for vo in VOS:
            users: list[_User] = []
            projects = self.vo_projects[vo.name]
            if vo.production:
                production_fqan = vo.fqan.replace("Role=NULL", "Role=production").replace("Role=Analysis", "Role=Production")
                users.append(_User(vo.name, f"{vo.name}prod", vo.production, False, production_fqan, tuple(projects[:1]), vo.memory_per_core, 0.9))
            for index in range(vo.users - len(users)):
                name, _ = self._person()
                login = self._login(name)
                token = rng.random() < 0.2
                if token:
                    subject = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                elif vo.name in ("cms", "atlas"):
                    subject = f"/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN={login}/CN={rng.randint(400000, 899999)}/CN={name}"
                elif vo.name in ("dune", "fermilab"):
                    subject = f"/DC=org/DC=cilogon/C=US/O=Fermi National Accelerator Laboratory/OU=People/CN={name}/CN=UID:{login}"
                else:
                    subject = f"/DC=org/DC=cilogon/C=US/O={rng.choice(USER_INSTITUTIONS)}/CN={name} A{rng.randint(10000, 999999)}"
                if vo.name == "osg":
                    own = (rng.choice(projects),) if rng.random() < 0.95 else ()
                elif rng.random() < 0.85:
                    own = tuple(rng.sample(projects, min(len(projects), rng.choice((1, 1, 2)))))
                else:
                    own = ()  # no ProjectName: the VO's field of science applies
                if index in (3, 7) and vo.name in ("osg", "ligo"):
                    own = (UNREGISTERED_PROJECTS[0 if vo.name == "osg" else 1],)
                memory = rng.choice((1000, 2000, 2000, 2000, 3000, 4000))
                users.append(_User(vo.name, login, subject, token, vo.fqan, own, memory, rng.uniform(0.5, 0.98)))
            self.users[vo.name] = users
            # A few heavy users, a long tail (Zipf-like); production identities run the most.
            self.user_weights[vo.name] = [1.0 / (rank + 1) ** 0.9 for rank in range(len(users))]
            if vo.production:
                self.user_weights[vo.name][0] = 3.0

    # pilots

    def _host(self, site: str) -> str:
        pattern = SITE_BY_NAME[site][2]
        return pattern.format(n=self.rng.randint(1, 999), m=self.rng.randint(1, 9))

    def make_pilots(self, count: int) -> list[_Pilot]:
        """`count` pilots in factory clusters of 1-5 glideins (same entry, client and QDate)."""
        rng = self.rng
        pilots: list[_Pilot] = []
        groups: list[list[_Pilot]] = []
        vo_weights = [(vo, vo.pilot_share) for vo in VOS]
        while len(pilots) < count:
            vo: VOSpec = _pick(rng, vo_weights)
            gpu = bool(vo.gpu_client) and rng.random() < GPU_CLIENT_SHARE
            client, frontend = (vo.gpu_client, vo.clients[0][1]) if gpu else rng.choice(vo.clients)
            site = _pick(rng, vo.sites)
            resource = rng.choice(SITE_BY_NAME[site][3])
            entry = {"cms": "CMSHTPC_", "atlas": "ATLAS_"}.get(vo.name, "OSG_") + resource.replace("-", "_")
            size = min(count - len(pilots), rng.choice((1, 1, 1, 2, 2, 3, 4, 5)))
            qdate = rng.randint(self.start, self.end - 3 * HOUR)
            group = []
            for _ in range(size):
                idle = rng.random() < IDLE_PILOT_SHARE
                cores = 4 if gpu else _pick(rng, vo.pilot_cores)
                start = qdate + int(rng.triangular(60, 4 * HOUR, 300))
                if idle:
                    lifetime = rng.randint(20 * 60, 2 * HOUR)
                else:
                    low, high, mode = vo.lifetime_hours
                    lifetime = int(rng.triangular(max(low, 2), high, mode) * HOUR)
                pilot = _Pilot(
                    vo=vo, client=client, frontend=frontend, site=site, resource=resource, entry=entry,
                    cores=cores, memory_mb=cores * vo.memory_per_core, gpus=1 if gpu else 0, qdate=qdate,
                    start=start, end=start + lifetime, host=self._host(site),
                    glidein=f"glidein_{rng.randint(1000, 4194303)}_{rng.randint(100000000, 999999999)}", idle=idle,
                )  # fmt: skip
                group.append(pilot)
            pilots.extend(group)
            groups.append(group)
        # Some clusters went through a second factory whose history was not collected.
        lost_target = max(1, round(LOST_PILOT_SHARE * count))
        lost = 0
        for group in groups:
            if lost >= lost_target:
                break
            if rng.random() < 0.2 and all(not p.idle and p.end <= self.end for p in group):
                for p in group:
                    p.schedd = LOST_FACTORY_SCHEDD
                lost += len(group)
        if lost == 0:  # tiny scales: make sure the case is there
            for group in groups:
                if all(not p.idle and p.end <= self.end for p in group):
                    for p in group:
                        p.schedd = LOST_FACTORY_SCHEDD
                    break
        for schedd in (FACTORY_SCHEDD, LOST_FACTORY_SCHEDD):
            cluster = self.next_cluster.get(schedd) or rng.randint(1_500_000, 9_000_000)
            for group in sorted((g for g in groups if g[0].schedd == schedd), key=lambda g: g[0].qdate):
                cluster += rng.randint(1, 40)
                for proc, pilot in enumerate(group):
                    pilot.cluster, pilot.proc = cluster, proc
            self.next_cluster[schedd] = cluster
        candidates = [p for p in pilots if not p.idle and p.schedd == FACTORY_SCHEDD and p.end <= self.end]
        for pilot in rng.sample(candidates, min(len(candidates), max(1, round(OVERCOMMIT_SHARE * count)))):
            pilot.overcommitted = True
        return pilots

    def in_history(self, pilot: _Pilot) -> bool:
        """Whether the factory history holds the pilot: collected factory, and ended before the month did."""
        return pilot.schedd == FACTORY_SCHEDD and pilot.end <= self.end

    # payloads

    def _lanes(self, pilot: _Pilot) -> list[int]:
        """Cores of the job streams run side by side in the pilot (their sum <= pilot cores, unless over-committed)."""
        rng = self.rng
        lanes: list[int] = []
        free = pilot.cores
        while free > 0:
            sizes = [(c, w) for c, w in pilot.vo.job_cores if c <= free]
            size = _pick(rng, sizes)
            lanes.append(size)
            free -= size
        if pilot.overcommitted:
            lanes += [1] * pilot.cores  # twice the cores: payload hours exceed the pilot's
        elif len(lanes) > 1 and rng.random() < 0.2:
            lanes.pop(rng.randrange(len(lanes)))  # cores never used: more residual
        return lanes

    def make_payloads(self, pilot: _Pilot) -> list[_Job]:
        """The user jobs of one pilot, each inside its lifetime; those still running at the end are left out."""
        rng = self.rng
        if pilot.idle:
            return []
        users, weights = self.users[pilot.vo.name], self.user_weights[pilot.vo.name]
        lo = pilot.start + rng.randint(60, 900)  # validation, condor start-up
        hi = pilot.end - rng.randint(0, 600)  # draining, shutdown
        lanes = self._lanes(pilot)
        target = rng.randint(4, 16)
        jobs: list[_Job] = []
        for slot, cores in enumerate(lanes, start=1):
            count = max(1, round(target / len(lanes) * rng.uniform(0.7, 1.3)))
            length = (hi - lo) / count
            while count > 1 and length < 600:
                count -= 1
                length = (hi - lo) / count
            busy = rng.uniform(0.9, 0.98) if pilot.overcommitted else rng.uniform(0.8, 0.98)
            gpus = 1 if pilot.gpus and slot == 1 else 0
            for index in range(count):
                duration = max(60, int(length * busy * rng.uniform(0.85, 1.0)))
                slack = max(0, int(length) - duration)
                start = int(lo + index * length) + rng.randint(0, slack)
                end = min(start + duration, hi)
                if end > self.end:
                    continue  # still running when the month ends
                if end <= start:
                    continue
                user = rng.choices(users, weights)[0]
                project = rng.choice(user.projects) if user.projects else ""
                efficiency = min(0.98, max(0.5, rng.gauss(user.efficiency, 0.08)))
                cpu = (end - start) * cores * efficiency
                cpu_sys = int(cpu * rng.uniform(0.01, 0.06))
                exit_code, exit_signal = self._exit()
                jobs.append(_Job(
                    user=user, project=project, start=start, end=end, cores=cores,
                    memory_mb=cores * user.memory_per_core, gpus=gpus, cpu_user=int(cpu) - cpu_sys, cpu_sys=cpu_sys,
                    exit_code=exit_code, exit_signal=exit_signal, pilot=pilot, slot=slot, host=pilot.host,
                ))  # fmt: skip
                pilot.cpu_user += int(cpu) - cpu_sys
                pilot.cpu_sys += cpu_sys
        pilot.jobs = len(jobs)
        return jobs

    def _exit(self) -> tuple[int | None, int | None]:
        draw = self.rng.random()
        if draw < 0.012:
            return None, self.rng.choice((9, 9, 11, 6, 15))
        if draw < 0.07:
            return self.rng.choice((1, 1, 1, 2, 8, 84, 127, 134, 137, 255)), None
        return 0, None

    # batch jobs

    def make_batch(self, count: int) -> dict[str, list[_Job]]:
        rng = self.rng
        out: dict[str, list[_Job]] = {site: [] for site, *_ in BATCH_SITES}
        shares = [(entry, entry[3]) for entry in BATCH_SITES]
        for index in range(count):
            site, _, vos, _ = BATCH_SITES[index] if index < len(BATCH_SITES) else _pick(rng, shares)
            vo = _pick(rng, vos)
            users, weights = self.users[vo], self.user_weights[vo]
            user = rng.choices(users, weights)[0]
            cores = rng.choice((1, 1, 1, 1, 8))
            duration = int(rng.triangular(600, 36 * HOUR, 4 * HOUR))
            qdate = rng.randint(self.start, self.end - duration - 2 * HOUR)
            start = qdate + rng.randint(30, 2 * HOUR)
            end = start + duration
            efficiency = min(0.98, max(0.5, rng.gauss(user.efficiency, 0.08)))
            cpu = duration * cores * efficiency
            cpu_sys = int(cpu * rng.uniform(0.01, 0.05))
            exit_code, exit_signal = self._exit()
            out[site].append(_Job(
                user=user, project=rng.choice(user.projects) if user.projects else "", start=start, end=end,
                cores=cores, memory_mb=cores * user.memory_per_core, gpus=0, cpu_user=int(cpu) - cpu_sys,
                cpu_sys=cpu_sys, exit_code=exit_code, exit_signal=exit_signal, pilot=None,
                slot=rng.randint(1, 64), host=self._host(site), qdate=qdate,
            ))  # fmt: skip
        return out

    def assign_clusters(self, jobs: list[_Job]) -> None:
        """Give jobs cluster/proc ids and QDates the way users submit: a user's jobs in clusters of 1-50."""
        rng = self.rng
        by_user: dict[str, list[_Job]] = {}
        for job in sorted(jobs, key=lambda j: (j.user.login, j.start, j.end, j.slot)):
            by_user.setdefault(job.user.login, []).append(job)
        clusters: list[list[_Job]] = []
        for login in sorted(by_user):
            queue = by_user[login]
            while queue:
                size = rng.choice((1, 1, 2, 3, 5, 8, 10, 20, 50))
                group, queue = queue[:size], queue[size:]
                first = min(job.start for job in group)
                qdate = max(self.start, first - rng.randint(30, 6 * HOUR))
                for job in group:
                    job.qdate = qdate
                clusters.append(group)
        cluster_id = rng.randint(100_000, 9_000_000)
        for group in sorted(clusters, key=lambda g: (g[0].qdate, g[0].user.login, g[0].start)):
            cluster_id += rng.randint(1, 25)
            for proc, job in enumerate(group):
                job.cluster, job.proc = cluster_id, proc


# --- ads ---------------------------------------------------------------------------------------------------

CONDOR_VERSION = '"$CondorVersion: 23.0.18 2024-11-26 BuildID: 769417 PackageID: 23.0.18-1 $"'
CONDOR_PLATFORM = '"$CondorPlatform: x86_64_AlmaLinux9 $"'


def _exit_lines(job: _Job) -> str:
    if job.exit_signal is not None:
        return f"ExitBySignal = true\nExitSignal = {job.exit_signal}\n"
    return f"ExitBySignal = false\nExitCode = {job.exit_code}\n"


def _identity_lines(user: _User, access_point: str) -> str:
    if user.token:
        vo = VO_BY_NAME[user.vo]
        return (
            f"AuthTokenSubject = {_q(user.subject)}\nAuthTokenIssuer = {_q(vo.token_issuer)}\n"
            f'AuthTokenGroups = "/{user.vo}"\nAuthTokenScopes = "compute.create,compute.read,compute.modify,compute.cancel"\n'
            f'AuthTokenId = "{uuid.uuid5(uuid.NAMESPACE_URL, access_point + "/" + user.subject).hex[:16]}"\n'
        )
    proxy = f"/var/lib/condor/spool/credentials/x509up_{user.login}"
    return (
        f"x509userproxysubject = {_q(user.subject)}\nx509UserProxyVOName = {_q(user.vo)}\n"
        f"x509UserProxyFirstFQAN = {_q(user.fqan)}\nx509UserProxyFQAN = {_q(user.subject + ',' + user.fqan)}\n"
        f"x509userproxy = {_q(proxy)}\n"
    )


def _job_padding(job: _Job, rng: random.Random) -> str:
    """Attributes a real schedd writes that no accounting field uses (24 lines, ~1 KB)."""
    image = rng.randint(50_000, job.memory_mb * 900)
    disk = rng.randint(10_000, 9_000_000)
    wall = job.end - job.start
    ip = f"192.170.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    return (
        f"ImageSize_RAW = {image}\nImageSize = {image + 2000 - image % 2000}\nResidentSetSize_RAW = {int(image * 0.8)}\n"
        f"ResidentSetSize = {int(image * 0.8) + 2000 - int(image * 0.8) % 2000}\nMemoryUsage = ((ResidentSetSize + 1023) / 1024)\n"
        f"DiskUsage_RAW = {disk}\nDiskUsage = {disk + 250 - disk % 250}\n"
        f"BytesSent = {rng.randint(10_000, 5_000_000_000)}.0\nBytesRecvd = {rng.randint(1_000, 500_000_000)}.0\n"
        f"CumulativeSlotTime = {wall}.0\nCommittedSlotTime = {wall * job.cores}.0\nNumSystemHolds = 0\n"
        f'JobLeaseDuration = 2400\nShouldTransferFiles = "YES"\nWhenToTransferOutput = "ON_EXIT"\nOnExitRemove = true\n'
        f"PeriodicRemove = (JobStatus == 2 && (time() - EnteredCurrentStatus) > 172800)\n"
        f"CondorVersion = {CONDOR_VERSION}\nCondorPlatform = {CONDOR_PLATFORM}\nAutoClusterId = {rng.randint(1, 9000)}\n"
        f'LastPublicClaimId = "<{ip}:{rng.randint(9618, 65000)}?addrs={ip}-9618&alias={job.host}&noUDP&sock=startd_{rng.randint(1000, 99999)}_{rng.randint(1000, 9999)}>#{job.pilot.start if job.pilot else job.qdate}#{rng.randint(1, 400)}#..."\n'
        f"MachineAttrMachine0 = {_q(job.host)}\n"
        f'Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) && (TARGET.HasFileTransfer) && (isUndefined(TARGET.IS_GLIDEIN) || TARGET.IS_GLIDEIN == true) && (TARGET.OSG_OS_VERSION == "9" || TARGET.OSG_OS_VERSION == "8")\n'
        f'DESIRED_Sites = "{job.pilot.site if job.pilot else ""}"\n'
    )


def payload_ad(job: _Job, access_point: str, rng: random.Random, padding: bool = False) -> str:
    """One payload's history ad and the `***` banner the schedd writes after it."""
    pilot = job.pilot
    user = job.user
    wall = job.end - job.start
    home = f"/home/{user.login}"
    parts = [
        f'MyType = "Job"\nTargetType = "Machine"\nClusterId = {job.cluster}\nProcId = {job.proc}\nQDate = {job.qdate}\n'
        f"Owner = {_q(user.login)}\nUser = {_q(user.login + '@' + access_point)}\n"
        f"AccountingGroup = {_q('group_' + user.vo + '.' + user.login)}\n",
        _identity_lines(user, access_point),
        f"ProjectName = {_q(job.project)}\n" if job.project else "",
        f"JobUniverse = 5\nCmd = {_q(home + '/jobs/run_' + str(job.cluster % 97) + '.sh')}\n"
        f"Iwd = {_q(home + '/jobs')}\nOut = \"_condor_stdout\"\nErr = \"_condor_stderr\"\n"
        f"UserLog = {_q(home + '/jobs/log/job_' + str(job.cluster) + '.log')}\n"
        f"RequestCpus = {job.cores}\nRequestMemory = {job.memory_mb}\n",
        f"RequestGPUs = {job.gpus}\n" if job.gpus else "",
        f"LastMatchTime = {max(job.qdate, job.start - rng.randint(1, 40))}\nJobStartDate = {job.start}\n"
        f"JobCurrentStartDate = {job.start}\nJobCurrentStartExecutingDate = {min(job.end, job.start + rng.randint(1, 30))}\n"
        f"NumJobStarts = 1\nNumShadowStarts = 1\nJobRunCount = 1\nNumJobMatches = 1\n"
        f"RemoteWallClockTime = {wall}.0\nCommittedTime = {wall}\n"
        f"RemoteUserCpu = {job.cpu_user}.0\nRemoteSysCpu = {job.cpu_sys}.0\nLocalUserCpu = 0.0\nLocalSysCpu = 0.0\n",
        _exit_lines(job),
        f"LastJobStatus = 2\nJobStatus = 4\nEnteredCurrentStatus = {job.end}\nCompletionDate = {job.end}\n"
        f"LastRemoteHost = {_q(f'slot1_{job.slot}@{pilot.glidein}@{pilot.host}')}\n"
        f"MachineAttrGLIDEIN_Site0 = {_q(pilot.site)}\nMachineAttrGLIDEIN_ResourceName0 = {_q(pilot.resource)}\n"
        f"MachineAttrCpus0 = {job.cores}\nMachineAttrMemory0 = {job.memory_mb}\n",
        f"MachineAttrGPUs0 = {job.gpus}\n" if pilot.gpus else "",
        f"MATCH_EXP_JOB_GLIDEIN_Schedd = {_q(pilot.schedd)}\nMATCH_EXP_JOB_GLIDEIN_ClusterId = \"{pilot.cluster}\"\n"
        f"MATCH_EXP_JOB_GLIDEIN_ProcId = \"{pilot.proc}\"\nMATCH_EXP_JOB_GLIDEIN_Entry_Name = {_q(pilot.entry)}\n"
        f'MATCH_EXP_JOB_GLIDEIN_Factory = "OSG"\nMATCH_EXP_JOB_GLIDEIN_Name = "gfactory_instance"\n'
        f"MATCH_EXP_JOBGLIDEIN_Site = {_q(pilot.site)}\nMATCH_EXP_JOBGLIDEIN_ResourceName = {_q(pilot.resource)}\n"
        f"MATCH_EXP_JOB_GLIDECLIENT_Name = {_q(pilot.client)}\n",
        _job_padding(job, rng) if padding else "",
        f"GlobalJobId = {_q(f'{access_point}#{job.cluster}.{job.proc}#{job.qdate}')}\n"
        f"*** ProcId = {job.proc} ClusterId = {job.cluster} Owner = {_q(user.login)} CompletionDate = {job.end}\n",
    ]
    return "".join(parts)


def batch_ad(job: _Job, schedd: str, rng: random.Random, padding: bool = False) -> str:
    """An ordinary grid job as the site's batch schedd (behind its HTCondor-CE) recorded it."""
    user = job.user
    wall = job.end - job.start
    account = f"{user.vo}{sum(map(ord, user.login)) % 1000:03d}"  # the CE's pool account
    spool = f"/var/lib/condor-ce/spool/{job.cluster % 10000}/0/cluster{job.cluster}.proc0.subproc0"
    parts = [
        f'MyType = "Job"\nTargetType = "Machine"\nClusterId = {job.cluster}\nProcId = {job.proc}\nQDate = {job.qdate}\n'
        f"Owner = {_q(account)}\nUser = {_q(account + '@' + schedd)}\n"
        f"AcctGroup = {_q(user.vo)}\nAccountingGroup = {_q('group_' + user.vo + '.' + account)}\n",
        _identity_lines(user, schedd),
        f"ProjectName = {_q(job.project)}\n" if job.project else "",
        f"JobUniverse = 5\nCmd = {_q(spool + '/condor_exec.exe')}\nIwd = {_q(spool)}\n"
        f"RoutedFromJobId = \"{job.cluster % 900_000 + 100_000}.0\"\nRoute = \"Local_Condor\"\n"
        f"RequestCpus = {job.cores}\nCpusProvisioned = {job.cores}\nRequestMemory = {job.memory_mb}\n"
        f"MemoryProvisioned = {job.memory_mb}\nJobStartDate = {job.start}\nJobCurrentStartDate = {job.start}\n"
        f"NumJobStarts = 1\nJobRunCount = 1\nRemoteWallClockTime = {wall}.0\nCommittedTime = {wall}\n"
        f"RemoteUserCpu = {job.cpu_user}.0\nRemoteSysCpu = {job.cpu_sys}.0\n",
        _exit_lines(job),
        f"LastJobStatus = 2\nJobStatus = 4\nEnteredCurrentStatus = {job.end}\nCompletionDate = {job.end}\n"
        f"LastRemoteHost = {_q(f'slot1_{job.slot}@{job.host}')}\n",
        _job_padding(job, rng) if padding else "",
        f"GlobalJobId = {_q(f'{schedd}#{job.cluster}.{job.proc}#{job.qdate}')}\n"
        f"*** ProcId = {job.proc} ClusterId = {job.cluster} Owner = {_q(account)} CompletionDate = {job.end}\n",
    ]
    return "".join(parts)


def pilot_ad(pilot: _Pilot, rng: random.Random, padding: bool = False) -> str:
    """A glidein as its factory's schedd recorded it (grid universe, glidein attributes from job.condor)."""
    vo = pilot.vo
    wall = pilot.end - pilot.start
    ce_host = pilot.resource.lower().replace("_", "-") + "." + SITE_BY_NAME[pilot.site][2].split(".", 1)[1]
    log_dir = f"/var/log/gwms-factory/client/user_{vo.factory_user}/glidein_gfactory_instance/entry_{pilot.entry}"
    overhead = int(wall * pilot.cores * rng.uniform(0.002, 0.01))
    cpu_user = min(int(pilot.cpu_user) + overhead, int(wall * pilot.cores * 0.995))
    cpu_sys = min(int(pilot.cpu_sys) + overhead // 4, max(0, int(wall * pilot.cores * 0.995) - cpu_user))
    remote_id = rng.randint(100000, 9999999)
    log_nr = datetime.fromtimestamp(pilot.qdate, UTC).strftime("%Y%m%d")
    parts = [
        f'MyType = "Job"\nTargetType = "Machine"\nClusterId = {pilot.cluster}\nProcId = {pilot.proc}\nQDate = {pilot.qdate}\n'
        f"Owner = {_q(vo.factory_user)}\nUser = {_q(vo.factory_user + '@' + FACTORY_HOST)}\n"
        f"JobUniverse = 9\nCmd = \"glidein_startup.sh\"\nIwd = \"/var/lib/gwms-factory/work-dir\"\n"
        f"Arguments = {_q(f'-v std -name gfactory_instance -entry {pilot.entry} -clientname {pilot.client} -schedd {pilot.schedd} -proxy None -factory OSG -web https://{FACTORY_HOST}/factory/stage/glidein_gfactory_instance -sign 4c1c5d3a -signentry 8a2e0f71 -signtype sha1 -descript description.{log_nr}.cfg -descriptentry description.{log_nr}.cfg -dir Condor -param_GLIDEIN_Client {pilot.client} -submitcredid 712345 -slotslayout partitionable -clientweb https://{vo.access_point}/vofrontend/stage -param_GLIDEIN_CPUS {pilot.cores}')}\n"
        f"GridResource = {_q(f'condor {ce_host} {ce_host}:9619')}\n"
        f"GridJobId = {_q(f'condor {ce_host} {ce_host}:9619 {remote_id}.0')}\nGridJobStatus = \"COMPLETED\"\n"
        f"Out = {_q(f'{log_dir}/job.{pilot.cluster}.{pilot.proc}.out')}\nErr = {_q(f'{log_dir}/job.{pilot.cluster}.{pilot.proc}.err')}\n"
        f"UserLog = {_q(f'{log_dir}/condor_activity_{log_nr}_{pilot.client}.log')}\n"
        f'GlideinFactory = "OSG"\nGlideinName = "gfactory_instance"\nGlideinEntryName = {_q(pilot.entry)}\n'
        f"GlideinEntrySubmitFile = {_q(f'entry_{pilot.entry}/job.condor')}\n"
        f"GlideinClient = {_q(pilot.client)}\nGlideinFrontendName = {_q(pilot.frontend)}\n"
        f'GlideinCredentialIdentifier = "712345"\nGlideinSecurityClass = "frontend"\n'
        f'GlideinWebBase = "https://{FACTORY_HOST}/factory/stage/glidein_gfactory_instance"\n'
        f'GlideinLogNr = "{log_nr}"\nGlideinWorkDir = "Condor"\nGlideinSlotsLayout = "partitionable"\n'
        f"GlideinMaxWalltime = {48 * HOUR - 600}\nGLIDEIN_Site = {_q(pilot.site)}\nGLIDEIN_ResourceName = {_q(pilot.resource)}\n"
        f"GLIDEIN_CPUS = {pilot.cores}\nGLIDEIN_MaxMemMBs = {pilot.memory_mb}\nxcount = {pilot.cores}\n"
        f"maxMemory = {pilot.memory_mb}\nmaxWallTime = {48 * 60}\nRequestCpus = 1\n",
        f"RequestGPUs = {pilot.gpus}\n" if pilot.gpus else "",
        f"x509userproxysubject = {_q(vo.robot_dn)}\nx509UserProxyVOName = {_q(vo.name)}\n"
        f"x509UserProxyFirstFQAN = {_q(vo.fqan.replace('Role=NULL', 'Role=pilot').replace('Role=Analysis', 'Role=pilot'))}\n"
        f"x509userproxy = {_q(f'/var/lib/gwms-factory/client-proxies/user_{vo.factory_user}/glidein_gfactory_instance/credential_{pilot.client}_712345')}\n"
        f"JobStartDate = {pilot.start}\nJobCurrentStartDate = {pilot.start}\nNumJobStarts = 1\nJobRunCount = 1\n"
        f"RemoteWallClockTime = {wall}.0\nCommittedTime = {wall}\nRemoteUserCpu = {cpu_user}.0\nRemoteSysCpu = {cpu_sys}.0\n"
        f"ExitBySignal = false\nExitCode = 0\nLastJobStatus = 2\nJobStatus = 4\n"
        f"EnteredCurrentStatus = {pilot.end}\nCompletionDate = {pilot.end}\n"
        f"LastRemoteHost = {_q(pilot.host)}\n",
        (
            f'Environment = "CONDORG_CLUSTER={pilot.cluster} CONDORG_SUBCLUSTER={pilot.proc} CONDORG_SCHEDD={pilot.schedd} GLIDEIN_USER={vo.factory_user}"\n'
            f'ShouldTransferFiles = "YES"\nWhenToTransferOutput = "ON_EXIT"\nTransferExecutable = true\nTransferOutput = ""\n'
            f"JobLeaseDuration = 2400\nPeriodicRemove = JobStatus == 1 && isInteger(7200) && 7200 > 0 && (time() - QDate) > 7200\n"
            f"NumGlobusSubmits = 1\nDelegateJobGSICredentialsLifetime = 0\nCondorVersion = {CONDOR_VERSION}\n"
            f"CondorPlatform = {CONDOR_PLATFORM}\nNumSystemHolds = 0\nNumRestarts = 0\nJobPrio = 0\n"
            f"ImageSize_RAW = 75\nImageSize = 100\nDiskUsage_RAW = 75\nDiskUsage = 100\nRequestDisk = DiskUsage\n"
            f"RequestMemory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024)\n"
            f'Requirements = true\nKillSig = "SIGTERM"\nOnExitRemove = true\n'
            if padding
            else ""
        ),
        f"GlobalJobId = {_q(f'{pilot.schedd}#{pilot.cluster}.{pilot.proc}#{pilot.qdate}')}\n"
        f"*** ProcId = {pilot.proc} ClusterId = {pilot.cluster} Owner = {_q(vo.factory_user)} CompletionDate = {pilot.end}\n",
    ]
    return "".join(parts)


# --- writing ---------------------------------------------------------------------------------------------


def _end_time(end: datetime | date | None) -> datetime:
    if end is None:
        return datetime.now(UTC).replace(microsecond=0)
    if not isinstance(end, datetime):
        return datetime(end.year, end.month, end.day, tzinfo=UTC)
    if end.tzinfo is None:
        end = end.replace(tzinfo=UTC)
    return end.astimezone(UTC).replace(microsecond=0)


def _write_history(path: Path, ads) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        chunk: list[str] = []
        for ad in ads:
            chunk.append(ad)
            count += 1
            if len(chunk) >= 2000:
                out.write("".join(chunk))
                chunk = []
        out.write("".join(chunk))
    return count


def _write_csv(path: Path, header: tuple[str, ...], rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _write_mappings(world: _World, directory: Path) -> dict[str, Path]:
    rng = world.rng
    month_start = datetime.fromtimestamp(world.start, UTC).date()
    sites = [(resource, site, facility) for site, facility, _, resources in SITES for resource in resources]
    benchmarks = []
    for resource, _, _ in sites:
        valid_from = (month_start - timedelta(days=rng.randint(60, 900))).isoformat()
        override = RESOURCE_BENCHMARK_OVERRIDES.get(resource, ())
        if override is None:
            continue  # deliberately without a factor: normalised hours 0, flagged for reconciliation
        benchmark, value = override if override else ("HS06", round(rng.uniform(8.0, 25.0), 2))
        benchmarks.append((resource, benchmark, f"{value:g}", valid_from))
        if resource == CHANGING_RESOURCE:
            benchmarks.append((resource, "HS23", f"{value * 1.12:.2f}", (month_start + timedelta(days=DAYS // 2)).isoformat()))
    clients = []
    for vo in VOS:
        clients += [(client, vo.name) for client, _ in vo.clients]
        if vo.gpu_client:
            clients.append((vo.gpu_client, vo.name))
    base = directory / "mappings"
    return {
        "vos": _write_csv(base / "vos.csv", ("vo", "field_of_science"), [(vo.name, vo.field_of_science) for vo in VOS]),
        "projects": _write_csv(base / "projects.csv", ("project", "field_of_science", "pi", "institution"), world.projects),
        "sites": _write_csv(base / "sites.csv", ("resource", "site", "facility"), sites),
        "benchmarks": _write_csv(base / "benchmarks.csv", ("resource", "benchmark", "value", "valid_from"), benchmarks),
        "frontends": _write_csv(base / "frontends.csv", ("client", "vo"), clients),
    }


def generate(
    directory: Path | str,
    seed: int = 42,
    scale: float = 1.0,
    end: datetime | date | None = None,
    padding: bool = False,
) -> Manifest:
    """Write a synthetic month (ending at `end`, default now) into `directory`; return what was written."""
    directory = Path(directory)
    end_time = _end_time(end)
    world = _World(seed, end_time)
    manifest = Manifest(
        directory=directory, seed=seed, scale=scale, start=end_time - timedelta(days=DAYS), end=end_time
    )
    manifest.mappings = _write_mappings(world, directory)
    rng = world.fill

    pilots = world.make_pilots(max(1, round(PILOTS_AT_SCALE_1 * scale)))
    payloads: dict[str, list[_Job]] = {vo.name: [] for vo in VOS}
    for pilot in pilots:
        payloads[pilot.vo.name].extend(world.make_payloads(pilot))
    written = [p for p in pilots if world.in_history(p)]
    written.sort(key=lambda p: (p.end, p.cluster, p.proc))
    path = directory / "factory" / "history"
    manifest.pilots = _write_history(path, (pilot_ad(p, rng, padding) for p in written))
    manifest.files.append(DataFile(path, FORMAT, "", "pilot", manifest.pilots))
    manifest.idle_pilots = sum(1 for p in written if p.idle)
    manifest.gpu_pilots = sum(1 for p in written if p.gpus)
    manifest.overcommitted_pilots = sum(1 for p in written if p.overcommitted)

    for vo in VOS:
        jobs = payloads[vo.name]
        if not jobs:
            continue
        world.assign_clusters(jobs)
        jobs.sort(key=lambda j: (j.end, j.cluster, j.proc))
        path = directory / "ap" / vo.name / "history"
        count = _write_history(path, (payload_ad(job, vo.access_point, rng, padding) for job in jobs))
        manifest.files.append(DataFile(path, FORMAT, "", "payload", count))
        manifest.payloads += count
        manifest.orphan_payloads += sum(1 for job in jobs if not world.in_history(job.pilot))

    batch = world.make_batch(max(len(BATCH_SITES), round(BATCH_AT_SCALE_1 * scale)))
    for site, schedd, _, _ in BATCH_SITES:
        jobs = batch[site]
        world.assign_clusters(jobs)
        jobs.sort(key=lambda j: (j.end, j.cluster, j.proc))
        path = directory / "ce" / site / "history"
        count = _write_history(path, (batch_ad(job, schedd, rng, padding) for job in jobs))
        manifest.files.append(DataFile(path, FORMAT, site, "batch", count))
        manifest.batch += count
    manifest.snapshots = directory / "capacity" / "snapshots.csv"
    manifest.snapshot_rows = _write_snapshots(manifest.snapshots, manifest.start, manifest.end, seed)
    return manifest


SNAPSHOT_HOURS = 3


def _write_snapshots(path: Path, start: datetime, end: datetime, seed: int) -> int:
    """Every SNAPSHOT_HOURS, per site: idle cores, pilots queued and idle jobs that could run there.
    Most sites are busy; some idle with jobs waiting (a provisioning bottleneck), some idle with none
    (insufficient demand). A random stream of its own, so the history files do not change."""
    rng = random.Random(seed * 7919 + 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = ["timestamp,site,idle_cores,pilots_queued,idle_jobs"]
    moment = start.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    while moment <= end:
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        for site, *_ in SITES:
            state = rng.random()
            if state < 0.7:
                idle, queued, waiting = rng.randint(0, 8), rng.randint(0, 20), rng.randint(0, 400)
            elif state < 0.85:
                idle, queued, waiting = rng.randint(16, 256), rng.randint(0, 3), rng.randint(50, 2000)
            else:
                idle, queued, waiting = rng.randint(16, 512), 0, 0
            rows.append(f"{stamp},{site},{idle},{queued},{waiting}")
        moment += timedelta(hours=SNAPSHOT_HOURS)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return len(rows) - 1


def write_payload_ads(
    path: Path | str,
    count: int,
    *,
    seed: int = 0,
    end: datetime | date | None = None,
    padding: bool = True,
    pilot_path: Path | str | None = None,
) -> int:
    """Write `count` payload ads (of all VOs, one access point) to `path` quickly, for benchmarks.

    With `pilot_path`, the factory history of their pilots is written there too (as in `generate`, ~3 % of
    the payloads name a pilot that is not in it); without it every payload is `payload_unmatched`.
    Returns the size of `path` in bytes.
    """
    world = _World(seed, _end_time(end))
    rng = world.fill
    jobs: list[_Job] = []
    pilots: list[_Pilot] = []
    while len(jobs) < count:
        batch = world.make_pilots(max(10, (count - len(jobs)) // 9))
        for pilot in batch:
            if len(jobs) >= count:
                break
            new = world.make_payloads(pilot)[: count - len(jobs)]
            if new:
                pilots.append(pilot)
                jobs.extend(new)
    world.assign_clusters(jobs)
    jobs.sort(key=lambda j: (j.end, j.cluster, j.proc))
    path = Path(path)
    _write_history(path, (payload_ad(job, job.pilot.vo.access_point, rng, padding) for job in jobs))
    if pilot_path is not None:
        keep = sorted((p for p in pilots if world.in_history(p)), key=lambda p: (p.end, p.cluster, p.proc))
        _write_history(Path(pilot_path), (pilot_ad(p, rng, padding) for p in keep))
    return path.stat().st_size
