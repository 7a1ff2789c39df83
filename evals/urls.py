from django.urls import path

from . import views

app_name = "evals"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/compare/<int:other_pk>/", views.run_compare, name="compare"),
]
