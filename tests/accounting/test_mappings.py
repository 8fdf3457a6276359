"""Mapping files (CONTRACT.md columns): loaded idempotently, bad files named by line, nothing half-written."""
from datetime import date

import pytest
from django.core.management import CommandError, call_command

from accounting.models import VO, BenchmarkFactor, Frontend, Project, Resource
from accounting.services.mappings import MappingError, import_mappings

pytestmark = pytest.mark.django_db


def test_every_kind_loads_and_a_second_load_changes_nothing(write):
    files = {
        "sites": "resource,site,facility\nCE-1,MWT2,University of Chicago\nCE-2,MWT2,University of Chicago\n",
        "vos": "vo,field_of_science\ncms,High Energy Physics\nligo,Gravitational Physics\n",
        "projects": "project,field_of_science,pi,institution\nAstro-1,Astronomy,Jane Roe,UW\n",
        "benchmarks": "resource,benchmark,value,valid_from\nCE-1,HS06,11.5,2024-01-01\nCE-2,SI2K,2500,2023-06-01\n",
        "frontends": "client,vo\ncms-frontend.main,cms\n",
    }
    for kind, text in files.items():
        first = import_mappings(kind, write(f"{kind}.csv", text))
        again = import_mappings(kind, write(f"{kind}.csv", text))
        assert first.created == text.count("\n") - 1
        assert (again.created, again.updated) == (0, 0)
    assert Resource.objects.get(name="CE-2").site.name == "MWT2"
    assert VO.objects.get(name="ligo").field_of_science.name == "Gravitational Physics"
    assert Project.objects.get(name="Astro-1").pi == "Jane Roe"
    assert BenchmarkFactor.objects.get(resource__name="CE-1").valid_from == date(2024, 1, 1)
    assert Frontend.objects.get().vo.name == "cms"


def test_a_changed_row_updates(write):
    import_mappings("vos", write("v.csv", "vo,field_of_science\ncms,Physics\n"))
    result = import_mappings("vos", write("v.csv", "vo,field_of_science\ncms,High Energy Physics\n"))
    assert result.updated == 1
    assert VO.objects.get(name="cms").field_of_science.name == "High Energy Physics"


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("sites", "host,site\nCE-1,X\n", ":1: missing column(s) resource"),
        ("benchmarks", "resource,benchmark,value,valid_from\nCE-1,HS06,11,2024-01-01\nCE-2,FLOPS,1,2024-01-01\n", ":3: benchmark must be one of"),
        ("benchmarks", "resource,benchmark,value,valid_from\nCE-1,HS06,-3,2024-01-01\n", ":2: benchmark value must be positive"),
        ("benchmarks", "resource,benchmark,value,valid_from\nCE-1,HS06,10,yesterday\n", ":2:"),
        ("frontends", "client,vo\nfe,\n", ":2: empty vo"),
    ],
)
def test_bad_files_name_file_and_line_and_write_nothing(write, kind, text, message):
    path = write(f"{kind}.csv", text)
    with pytest.raises(MappingError) as error:
        import_mappings(kind, path)
    assert str(path) + message in str(error.value)
    assert not BenchmarkFactor.objects.exists() and not Resource.objects.filter(name="CE-1").exists()


def test_command_reports_counts_and_errors(write, capsys):
    call_command("import_mappings", "vos", str(write("v.csv", "vo,field_of_science\ncms,HEP\n")))
    assert "created=1" in capsys.readouterr().out
    with pytest.raises(CommandError, match="missing column"):
        call_command("import_mappings", "vos", str(write("bad.csv", "name\ncms\n")))
