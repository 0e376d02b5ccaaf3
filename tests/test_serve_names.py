import pytest

from deblur.errors import SettingError
from deblur.serve.names import check_host_names, check_origins, given_names


@pytest.mark.parametrize(
    "origin", ["http://localhost:3000", "https://photos.example.org", "http://[::1]:8080", "*", "null"]
)
def test_origins_as_a_browser_sends_them_are_taken(origin):
    check_origins([origin])


# each had started the server without a word, and the page it was meant for was refused (403): a browser's Origin
# has a scheme, and no path, not even a /
@pytest.mark.parametrize("origin", ["localhost:3000", "http://localhost:3000/", "http://a.org/app", "", "http://x:y"])
def test_an_origin_no_browser_sends_is_refused_naming_the_option(origin):
    with pytest.raises(SettingError, match=r"is not an origin as a browser sends it: scheme://host\[:port\]") as err:
        check_origins(["http://localhost:3000", origin])
    assert err.value.settings == ("cors_origin",)


@pytest.mark.parametrize("name", ["photos.example.org", "*", "192.168.1.20", "[::1]"])
def test_host_names_and_addresses_are_taken(name):
    check_host_names([name])


@pytest.mark.parametrize("name", ["photos.example.org:8000", "https://photos.example.org", "", "a/b"])
def test_a_host_name_with_a_scheme_port_or_path_is_refused_naming_the_option(name):
    # the server compares the Host header's name alone: these never matched
    with pytest.raises(SettingError, match="is not a host name as requests address the server") as err:
        check_host_names([name])
    assert err.value.settings == ("allow_host",)


def test_the_server_checks_them_before_its_model_loads(monkeypatch):
    import deblur.inference
    from deblur.serve import server

    monkeypatch.setattr(deblur.inference, "open_deblurrer", lambda *args, **kwargs: pytest.fail("model loaded"))
    with pytest.raises(SettingError, match="'localhost:3000' is not an origin"):
        server.serve(port=0, cors_origins=("localhost:3000",))
    with pytest.raises(SettingError, match="'photos.example.org:8000' is not a host name"):
        server.serve(port=0, allowed_hosts=("photos.example.org:8000",))


def test_one_name_given_as_a_string_is_one_name_not_its_letters(monkeypatch):
    import deblur.inference
    from deblur.serve import server

    # allowed_hosts="photos.example.org" had allowed hosts named "p", "h", "o", ..., and not the name itself
    assert given_names("photos.example.org", "allowed_hosts", "allow_host") == ("photos.example.org",)
    assert given_names(["a.org", "b.org"], "allowed_hosts", "allow_host") == ("a.org", "b.org")
    assert given_names(None, "allowed_hosts", "allow_host") == ()  # had been "'NoneType' object is not iterable"
    monkeypatch.setattr(deblur.inference, "open_deblurrer", lambda *args, **kwargs: pytest.fail("model loaded"))
    with pytest.raises(SettingError, match="'photos.example.org:8000' is not a host name"):  # had been "':'"
        server.serve(port=0, allowed_hosts="photos.example.org:8000")
    with pytest.raises(SettingError, match="'localhost:3000' is not an origin"):  # had been "'l'"
        server.serve(port=0, cors_origins="localhost:3000")
    with pytest.raises(SettingError, match="the host is int 5: name the address as a string") as err:
        server.serve(host=5, port=0)  # had been "'int' object has no attribute 'strip'"
    assert err.value.settings == ("host",)


@pytest.mark.parametrize(
    "given, said, setting",
    [
        (dict(allowed_hosts=[5]), r"allowed_hosts must be strings, one or a list of them; got \[5\]", "allow_host"),
        (dict(cors_origins=5), "cors_origins must be strings, one or a list of them; got 5", "cors_origin"),
        (dict(limits={"max_bytes": 5}), "limits must be a deblur.serve.limits.Limits, not dict", "limits"),
        (dict(show_paths="no"), "show_paths must be True or False; got show_paths='no'", "show_paths"),
        (dict(precision="fp8"), "precision must be one of auto, float32, bfloat16; got 'fp8'", "precision"),
    ],
)
def test_what_the_server_is_started_with_is_named_before_the_port_is_taken(monkeypatch, given, said, setting):
    # [5] had ended on "'int' object has no attribute 'strip'", a dict of limits on "... no attribute 'waiting'"
    # once the model had loaded, show_paths="no" showed the model's path to anyone (a string is true), and
    # precision="fp8" was said once the port had been taken
    import deblur.inference
    from deblur.serve import server

    monkeypatch.setattr(deblur.inference, "open_deblurrer", lambda *args, **kwargs: pytest.fail("model loaded"))
    monkeypatch.setattr(server, "listen", lambda *args: pytest.fail("the port was taken"))
    with pytest.raises(SettingError, match=said) as err:
        server.serve(port=0, **given)
    assert err.value.settings == (setting,)
