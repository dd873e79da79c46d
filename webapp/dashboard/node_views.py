"""Drain, pause and resume a node: the nodes page's buttons and the JSON API (``GET /api/nodes/``,
``POST /api/nodes/<node>/<drain|pause|resume>/``). Thin: ``webapp.services.node_control`` decides."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from webapp.dashboard.access import api_login_required
from webapp.dashboard.api_errors import json_error
from webapp.services import node_control


@login_required
@require_POST
def node_action(request: HttpRequest, node: str, action: str) -> HttpResponse:
    try:
        row = node_control.set_state(request.user, node, action)
    except node_control.NodeError as error:
        return HttpResponse(str(error), status=error.status, content_type="text/plain; charset=utf-8")
    messages.success(request, f"Node {node} is {row['state']}.")
    return redirect("nodes")


@api_login_required
@require_GET
def api_nodes(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"nodes": node_control.node_rows()})


@api_login_required
@require_POST
def api_node_action(request: HttpRequest, node: str, action: str) -> JsonResponse:
    try:
        return JsonResponse(node_control.set_state(request.user, node, action))
    except node_control.NodeError as error:
        return json_error(str(error), error.status)
