"""Pages. Views stay thin: they gather data from services and render a template."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.stack.health import system_status


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/home.html", {"status": system_status()})
