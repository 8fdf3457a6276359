"""Error answers of the API: `{"error": ..., "parameter": ...}` naming the parameter at fault."""
from rest_framework.response import Response

from accounting.services.reports import QueryError
from portal.scope import PersonLevelDenied


def bad_request(error: QueryError) -> Response:
    return Response({"error": error.message, "parameter": error.parameter}, status=400)


def person_level_denied(error: PersonLevelDenied) -> Response:
    return Response({"error": error.message, "parameter": error.parameter}, status=403)
