import pytest


@pytest.fixture
def broken_database():
    raise ConnectionError("connection to 10.0.0.7:5432 refused after 3 retries")


@pytest.fixture
def leaky_resource():
    yield "resource"
    raise RuntimeError("resource was not released")
