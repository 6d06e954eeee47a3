// Starts the whole Hydrogen web client (login, session, room list, room view, composer) from the npm
// package hydrogen-view-sdk, the way Hydrogen's own web entry does: a Platform on the page's body,
// the URL router, the root view model and its view. Bundled with esbuild (tests/support/matrix_client.py);
// the page (hydrogen.html) serves config.json (the homeserver), sw.js and the olm assets beside it.
import {Platform, RootViewModel, createNavigation, createRouter, FeatureSet} from "hydrogen-view-sdk";

const assets = "./hydrogen/asset-build/assets/";

async function main() {
    const platform = new Platform({
        container: document.body,
        configURL: "./config.json",
        assetPaths: {
            downloadSandbox: assets + "download-sandbox.html",
            worker: assets + "main.js",
            olm: {wasm: "./olm/olm.wasm", legacyBundle: "./olm/olm_legacy.js", wasmBundle: "./olm/olm.js"},
            // Hydrogen 0.3 hands the access token to its service worker (authenticated media) and
            // needs one to start a session
            serviceWorker: "sw.js",
        },
    });
    await platform.init();
    const features = await FeatureSet.load(platform.settingsStorage);
    const navigation = createNavigation();
    platform.setNavigation(navigation);
    const urlRouter = createRouter({navigation, history: platform.history});
    urlRouter.attach();
    const vm = new RootViewModel({platform, urlRouter, navigation, features});
    await vm.load();
    platform.createAndMountRootView(vm);
}

main().catch((err) => {
    console.error(err);
    document.body.dataset.startError = String(err && err.message || err);
});
