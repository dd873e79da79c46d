from django.urls import path

from webapp.dashboard import views

urlpatterns = [
    path("", views.home, name="home"),
]
