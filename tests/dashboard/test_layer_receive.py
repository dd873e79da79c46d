"""abandonable: a consumer whose layer receive ignores its cancellation still ends (see layer_receive)."""
import asyncio

from webapp.dashboard.layer_receive import PATIENCE, abandonable


def test_a_receive_that_ignores_cancellation_is_abandoned_not_awaited():
    async def scenario():
        release = asyncio.Event()
        swallowed = []

        async def stubborn():  # as redis-py's retries can: the cancellation is lost, the wait goes on
            while True:
                try:
                    await release.wait()
                    return {"type": "late"}
                except asyncio.CancelledError:
                    swallowed.append(True)

        waiter = asyncio.ensure_future(abandonable(stubborn)())
        await asyncio.sleep(0)
        waiter.cancel()
        done, _ = await asyncio.wait([waiter], timeout=PATIENCE + 10)
        assert done == {waiter} and waiter.cancelled()
        assert swallowed == [True]
        release.set()  # the abandoned receive still ends when its message comes, its result read by nobody
        await asyncio.sleep(0.01)

    asyncio.run(scenario())


def test_a_message_and_an_error_come_through_unchanged():
    async def message():
        return {"type": "search.event"}

    async def failing():
        raise ConnectionError("redis away")

    async def scenario():
        assert await abandonable(message)() == {"type": "search.event"}
        try:
            await abandonable(failing)()
        except ConnectionError as error:
            return str(error)

    assert asyncio.run(scenario()) == "redis away"


def test_a_receive_that_listens_has_ended_when_the_consumer_goes_on():
    async def scenario():
        ended = []

        async def polite():
            try:
                await asyncio.Event().wait()
            finally:
                ended.append(True)

        waiter = asyncio.ensure_future(abandonable(polite)())
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        return ended

    assert asyncio.run(scenario()) == [True]
